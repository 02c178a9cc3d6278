package faults_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

// The control plane is shared by every scenario; each uses its own
// namespace (and, where it injects faults, its own proxy).
var (
	cfg    *rest.Config // the API server, as a cluster administrator
	scheme = runtime.NewScheme()
	k8s    client.Client // the test's own client: straight to the API server, no cache
	logs   = &logBook{}  // what the operators logged, for checks of error messages
)

// update makes the run rewrite docs/reliability.md instead of checking it.
var update = flag.Bool("update", false, "rewrite the table in docs/reliability.md with this run's figures")

// TestMain starts the control plane, runs the scenarios, checks that they
// left no goroutines behind, and checks or rewrites the table of results in
// docs/reliability.md.
func TestMain(m *testing.M) {
	// Operators log into logs; with GOPF_TEST_LOG set, to stderr as well.
	var tee logr.LogSink
	if os.Getenv("GOPF_TEST_LOG") != "" {
		tee = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)).GetSink()
	}
	logger := logr.New(&captureSink{book: logs, tee: tee})
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}},
		Logger:       &logger,
		BeforeTests: func(cp *envtest.ControlPlane) (err error) {
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kopfv1.AddToScheme} {
				if err := add(scheme); err != nil {
					return err
				}
			}
			cfg = cp.Config
			if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
				return err
			}
			// The first request opens the test client's connection, which
			// lives as long as the process: it must not count as a leak.
			return k8s.List(context.Background(), &corev1.NamespaceList{})
		},
		// Every operator and proxy a scenario started must be gone,
		// goroutines and all, once the scenario is over.
		CheckGoroutines: true,
		AfterTests:      func() error { return settleResults(*update) },
	})
}
