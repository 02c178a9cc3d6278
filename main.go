package gopf

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
	"github.com/gopf-dev/gopf/internal/transport"
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
	// fields they set (concurrency, namespaces, peering, sharding).
	Engine reconcile.Options
	// WatchInactivityTimeout is the default of --watch-inactivity-timeout:
	// see ManagerOptions.WatchInactivityTimeout, whose zero and negative
	// values it shares (0: 2 minutes; negative: no bound). Kopf's
	// settings.watching.inactivity_timeout.
	WatchInactivityTimeout time.Duration
	// WatchServerTimeout is the default of --watch-server-timeout: see
	// ManagerOptions.WatchServerTimeout (0: client-go's 5 to 10 minutes).
	// Kopf's settings.watching.server_timeout. Negative is an error.
	WatchServerTimeout time.Duration
}

// MainWith is Main with the engine's options (storage, backoff, memo, log
// events, ...) chosen in code.
func MainWith(reg *handlers.Registry, opts MainOptions) {
	if opts.WatchServerTimeout < 0 {
		fmt.Fprintln(os.Stderr, "gopf: MainOptions.WatchServerTimeout cannot be negative (0 leaves it to client-go)")
		os.Exit(1)
	}
	err := cli.Run(cli.Program{
		Name:        filepath.Base(os.Args[0]),
		Registry:    reg,
		AddToScheme: opts.AddToScheme,
		Engine:      opts.Engine,
		Watch:       watchDefaults(opts),
		NewManager: func(cfg *rest.Config, scheme *runtime.Scheme, f *cli.Flags) (manager.Manager, error) {
			return NewManager(cfg, reg, managerOptions(f, scheme, opts.Engine))
		},
	}, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "gopf:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// watchDefaults turns MainOptions' watch timeouts into the defaults of the
// flags, whose 0 is "no bound".
func watchDefaults(opts MainOptions) cli.WatchDefaults {
	inactivity := opts.WatchInactivityTimeout
	switch {
	case inactivity == 0:
		inactivity = transport.DefaultWatchInactivityTimeout
	case inactivity < 0:
		inactivity = 0
	}
	return cli.WatchDefaults{Inactivity: inactivity, Server: opts.WatchServerTimeout}
}

// managerOptions are the manager's options that the flags f govern, with
// the engine's options set in code and the flags over them.
// controller-runtime leaves the client unthrottled; gopf sets a ceiling
// (--kube-api-qps) high enough not to slow normal work and low enough to
// stop a storm.
func managerOptions(f *cli.Flags, scheme *runtime.Scheme, engine reconcile.Options) ManagerOptions {
	return ManagerOptions{
		Scheme:                  scheme,
		Engine:                  f.EngineOptions(engine),
		QPS:                     float32(f.QPS),
		Burst:                   f.Burst,
		MetricsBindAddress:      f.MetricsAddr,
		MetricsInsecure:         !f.MetricsSecure,
		MetricsCertDir:          f.MetricsCertDir,
		HealthProbeBindAddress:  f.ProbeAddr,
		LeaderElection:          f.LeaderElect,
		LeaderElectionID:        f.ElectionID,
		GracefulShutdownTimeout: &f.ShutdownTimeout,
		WatchInactivityTimeout:  f.WatchInactivityTimeout(),
		WatchServerTimeout:      f.WatchServerTimeout(),
		Webhook:                 f.Webhook,
		KeepManagedFields:       f.KeepManagedFields,
		CacheUnselected:         f.CacheUnselected,
		ReconciliationTimeout:   f.ReconciliationTimeout,
		Warmup:                  f.Warmup,
	}
}
