package cli

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// Program is an operator binary as gopf.MainWith describes it: its name,
// its handlers and engine options, and what it needs of package gopf,
// which this package cannot import.
type Program struct {
	// Name is the binary's name, as flags and messages show it.
	Name string
	// Registry holds the operator's handlers.
	Registry *handlers.Registry
	// AddToScheme register the Go types the handlers use.
	AddToScheme []func(*runtime.Scheme) error
	// Engine are the engine's options set in code; the flags override the
	// fields they govern.
	Engine reconcile.Options
	// Watch are the defaults of the watch flags.
	Watch WatchDefaults
	// NewManager builds the manager of the operator the flags f describe,
	// for the cluster cfg, with the Go types of scheme.
	NewManager func(cfg *rest.Config, scheme *runtime.Scheme, f *Flags) (manager.Manager, error)
}

// Run is gopf.MainWith up to the exit: it runs the command that args name,
// or the operator when they name none, until SIGINT or SIGTERM.
func Run(p Program, args []string) error {
	if len(args) > 0 && (args[0] == "freeze" || args[0] == "resume") {
		return runFreeze(p.Name, args[0], args[1:])
	}
	if len(args) > 0 && (args[0] == "status" || args[0] == planCommand) {
		return runStatus(p, args[0], args[1:])
	}
	fs, f := NewFlags(p.Name, p.Watch)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (commands: freeze, resume, status, plan)", fs.Args())
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := f.checkSharding(p.Engine.Sharding); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), f.encoder()))
	scheme, err := buildScheme(p.AddToScheme)
	if err != nil {
		return err
	}
	if f.rbac.Given() {
		return f.rbac.Run(os.Stdout, p.Registry, scheme)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster (set KUBECONFIG or run in a cluster): %w", err)
	}
	mgr, err := p.NewManager(cfg, scheme, f)
	if err != nil {
		return f.explain(err)
	}
	if f.releasePages {
		release := pageRelease{cache: mgr.GetCache(), settle: startupSettle, release: releaseBinaryPages, log: ctrl.Log.WithName("gopf")}
		if err := mgr.Add(release); err != nil {
			return err
		}
	}
	ctrl.Log.WithName("gopf").Info("starting the operator", "name", p.Name, "namespaces", f.namespaces.String(), "peering", f.peeringName)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// buildScheme is a scheme of the built-in kinds and of addToScheme's.
func buildScheme(addToScheme []func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return scheme, nil
}
