package faults_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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

// TestMain starts the control plane (envtest.Shared rather than
// envtest.Main, so that goroutine leaks and docs/reliability.md can be
// checked after the tests and before it stops), runs the scenarios, and
// checks or rewrites the table of results.
func TestMain(m *testing.M) {
	flag.Parse()
	// Operators log into logs; with GOPF_TEST_LOG set, to stderr as well.
	var tee logr.LogSink
	if os.Getenv("GOPF_TEST_LOG") != "" {
		tee = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)).GetSink()
	}
	logf.SetLogger(logr.New(&captureSink{book: logs, tee: tee}))

	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kopfv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	cp, err := envtest.Shared(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		os.Exit(1)
	}
	cfg = cp.Config
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}
	// The first request opens the test client's connection, which lives as
	// long as the process: it must not count as a leak.
	if err := k8s.List(context.Background(), &corev1.NamespaceList{}); err != nil {
		panic(err)
	}
	before := goleak.IgnoreCurrent()

	code := m.Run()

	if code == 0 {
		// Every operator and proxy a scenario started must be gone,
		// goroutines and all, once the scenario is over.
		if err := goleak.Find(before); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := settleResults(*update); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if err := envtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}
