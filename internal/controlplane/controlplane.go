// Package controlplane gives the tests of gopf's low-level packages (those
// below the engine, which cannot use package envtest without an import
// cycle) a real API server: envtest's kube-apiserver and etcd, started by
// the first test that asks for one, and a TestMain that stops it and fails
// the package if a test left a goroutine behind.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"go.uber.org/goleak"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Lazy is a control plane started on first use. The zero value is ready.
type Lazy struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
}

// Config returns the configuration of the API server, starting the control
// plane if it does not run yet (from KUBEBUILDER_ASSETS, or the
// repository's bin/k8s, where `make envtest` puts the binaries).
func (l *Lazy) Config(t testing.TB) *rest.Config {
	t.Helper()
	l.once.Do(func() {
		l.env = &envtest.Environment{}
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			_, file, _, _ := runtime.Caller(0)
			l.env.BinaryAssetsDirectory = filepath.Join(filepath.Dir(file), "..", "..", "bin", "k8s", "1.37.0-linux-amd64")
		}
		l.cfg, l.err = l.env.Start()
	})
	if l.err != nil {
		t.Fatalf("starting the control plane: %v", l.err)
	}
	return l.cfg
}

// Main runs the package's tests, stops the control plane if one was
// started, and fails the package if a test left a goroutine behind.
func Main(m *testing.M, l *Lazy) {
	code := m.Run()
	if l.cfg != nil {
		// client-go's shared transport may keep idle connections; they are
		// not leaks.
		if hc, err := rest.HTTPClientFor(l.cfg); err == nil {
			utilnet.CloseIdleConnectionsFor(hc.Transport)
		}
	}
	if l.env != nil {
		if err := l.env.Stop(); err != nil {
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
