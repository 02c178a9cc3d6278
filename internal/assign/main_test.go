package assign

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The control plane of the package's tests, started by the first test that
// needs one: the unit tests run without.
var controlPlane struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
}

// apiServer returns the config of a real API server (envtest's etcd and
// kube-apiserver from KUBEBUILDER_ASSETS, or the repository's bin/k8s).
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	controlPlane.once.Do(func() {
		controlPlane.env = &envtest.Environment{}
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			controlPlane.env.BinaryAssetsDirectory = "../../bin/k8s/1.37.0-linux-amd64"
		}
		controlPlane.cfg, controlPlane.err = controlPlane.env.Start()
	})
	if controlPlane.err != nil {
		t.Fatalf("starting the control plane: %v", controlPlane.err)
	}
	return controlPlane.cfg
}

// TestMain fails the package if a test leaves a goroutine behind, such as
// an assigner or view watching after it was stopped.
func TestMain(m *testing.M) {
	code := m.Run()
	if controlPlane.cfg != nil {
		// client-go's shared transport may keep idle connections; they are
		// not leaks.
		if hc, err := rest.HTTPClientFor(controlPlane.cfg); err == nil {
			utilnet.CloseIdleConnectionsFor(hc.Transport)
		}
	}
	if controlPlane.env != nil {
		if err := controlPlane.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}
