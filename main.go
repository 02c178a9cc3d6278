package gopf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gopf-dev/gopf/reconcile"
)

// SetupWithManager adds the handlers of reg to a manager the caller already
// has, next to its own Reconcilers. The manager's client should cache
// unstructured objects if unstructured handlers are registered; gopf itself
// reads through the manager's cache either way.
func SetupWithManager(mgr manager.Manager, reg *Registry) error {
	return reconcile.Setup(mgr, reg, reconcile.Options{})
}

// Main runs an operator made of the handlers in reg until SIGINT or SIGTERM,
// the way a kubebuilder main.go does: it parses the command-line flags,
// builds a manager for the cluster in KUBECONFIG (or in-cluster config),
// adds the handlers and starts it. addToScheme registers the Go types the
// handlers use (built-in kinds are always known). Main exits the process:
// with status 1 and a message naming the problem if anything fails.
func Main(reg *Registry, addToScheme ...func(*runtime.Scheme) error) {
	if err := run(reg, addToScheme, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gopf:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func run(reg *Registry, addToScheme []func(*runtime.Scheme) error, args []string) error {
	name := filepath.Base(os.Args[0])
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var (
		metricsAddr = fs.String("metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
		probeAddr   = fs.String("health-probe-bind-address", ":8081", "The address the health probe endpoint binds to; 0 disables it.")
		leaderElect = fs.Bool("leader-elect", false, "Enable leader election, so that only one replica handles objects at a time.")
		electionID  = fs.String("leader-election-id", name+".gopf.dev", "The name of the Lease used for leader election.")
		concurrency = fs.Int("max-concurrent-reconciles", 16, "How many objects of one kind are handled at once.")
	)
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return fmt.Errorf("building the scheme: %w", err)
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster (set KUBECONFIG or run in a cluster): %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
		LeaderElection:         *leaderElect,
		LeaderElectionID:       *electionID,
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := reconcile.Setup(mgr, reg, reconcile.Options{MaxConcurrentReconciles: *concurrency}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("gopf").Info("starting the operator", "name", name)
	return mgr.Start(ctrl.SetupSignalHandler())
}
