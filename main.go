package gopf

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// Main runs an operator made of the handlers in reg until SIGINT or SIGTERM,
// the way a kubebuilder main.go does: it parses the command-line flags,
// builds a manager for the cluster in KUBECONFIG (or in-cluster config),
// adds the handlers and starts it. addToScheme registers the Go types the
// handlers use (built-in kinds are always known). Main exits the process:
// with status 1 and a message naming the problem if anything fails.
//
// Besides running, the binary answers two commands of Kopf's: `freeze`
// pauses the operators of a peering for a while, `resume` ends that; and
// two that only read: `status [KIND] [NAME]` shows where each handler
// stands on each object, `plan` what the operator would do with each
// object on start. Run it (or a command) with -h for the flags.
func Main(reg *handlers.Registry, addToScheme ...func(*runtime.Scheme) error) {
	MainWith(reg, MainOptions{AddToScheme: addToScheme})
}

// MainOptions configure MainWith.
type MainOptions struct {
	// AddToScheme register the Go types the handlers use.
	AddToScheme []func(*runtime.Scheme) error
	// Engine are the engine's options; the command-line flags override the
	// fields they set (concurrency, namespaces, peering).
	Engine reconcile.Options
}

// MainWith is Main with the engine's options (storage, backoff, memo, log
// events, ...) chosen in code.
func MainWith(reg *handlers.Registry, opts MainOptions) {
	err := run(reg, opts, filepath.Base(os.Args[0]), os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "gopf:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// run is Main up to the exit: it runs the command args name, or the
// operator when there is none.
func run(reg *handlers.Registry, mo MainOptions, name string, args []string) error {
	if len(args) > 0 && (args[0] == "freeze" || args[0] == "resume") {
		return runFreeze(name, args[0], args[1:])
	}
	if len(args) > 0 && (args[0] == "status" || args[0] == "plan") {
		return runStatus(reg, mo, name, args[0], args[1:])
	}
	fs, f := newFlags(name)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (commands: freeze, resume, status, plan)", fs.Args())
	}
	if err := f.check(); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), f.encoder()))
	scheme, err := buildScheme(mo.AddToScheme)
	if err != nil {
		return err
	}
	if f.printRBAC != "" || f.checkRBAC != "" {
		return rbac(os.Stdout, reg, scheme, f)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster (set KUBECONFIG or run in a cluster): %w", err)
	}
	mgr, err := NewManager(cfg, reg, f.managerOptions(scheme, mo.Engine))
	if err != nil {
		return err
	}
	ctrl.Log.WithName("gopf").Info("starting the operator", "name", name, "namespaces", f.namespaces.String(), "peering", f.peeringName)
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
