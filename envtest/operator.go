package envtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

// DefaultBackoff is the delay before a test operator retries a handler
// whose error said nothing about when to retry, unless the handler has a
// Backoff of its own or OperatorOptions.Reconcile.DefaultBackoff is set.
// Operators wait 60 s, as Kopf does; a test would time out before the
// second attempt, and a wait would only say that its condition never held.
const DefaultBackoff = time.Second

// OperatorOptions configure an in-process operator.
type OperatorOptions struct {
	// Main, if set, are the options the deployed operator gives
	// gopf.MainWith: the test operator then runs with the same engine
	// options (prefix, finalizer, storage, ...) and a scheme made of the
	// same AddToScheme, so that what a test sees is what the deployed
	// operator does. Keep them in one variable that main and the tests
	// share:
	//
	//	var options = gopf.MainOptions{AddToScheme: ..., Engine: reconcile.Options{Prefix: "example.com"}}
	//
	//	func main() { gopf.MainWith(registry(), options) }
	//
	//	env := envtest.Run(t, registry(), envtest.OperatorOptions{Main: &options})
	//
	// Setting Reconcile too is an error, and so is Scheme when
	// Main.AddToScheme is set. Namespaces, if set, overrides
	// Main.Engine.Namespaces, as --namespace does for MainWith. As for
	// Reconcile, a zero Main.Engine.DefaultBackoff becomes DefaultBackoff.
	Main *gopf.MainOptions
	// Scheme knows the Go types of the handlers. Default: the scheme of
	// Main.AddToScheme if Main is set, else client-go's scheme of built-in
	// kinds.
	Scheme *runtime.Scheme
	// Reconcile are the engine's options. A zero DefaultBackoff becomes
	// this package's DefaultBackoff (1 s), not the engine's 60 s.
	Reconcile reconcile.Options
	// StartTimeout bounds the wait for the caches to fill. Default: 30 s.
	StartTimeout time.Duration
	// Requests, if set, counts every request the operator sends.
	Requests *RequestCounter
	// Namespaces limits the operator to namespaces matching these patterns,
	// as --namespace does: it is short for Reconcile.Namespaces (give one of
	// the two). Default: all namespaces; for Run and Env.Start, the test's
	// namespace ("*" watches all).
	Namespaces []string
	// Webhook configures the webhook server of the registry's admission
	// handlers (see package webhook); a registry without admission handlers
	// gets none, unless Webhook.Finalizers is webhook.FinalizersAlways. Default: webhook.Options{}: a free port on 127.0.0.1, a
	// self-signed CA, webhook configurations pointing at it by URL.
	// Operators with admission handlers that run side by side need Names of
	// their own.
	Webhook *webhook.Options
	// MetricsBindAddress and HealthProbeBindAddress are where the metrics
	// (with the probe results at /probes) and the health endpoints listen,
	// such as "127.0.0.1:8080". Default: off.
	MetricsBindAddress, HealthProbeBindAddress string
	// SecureMetrics serves the metrics as gopf.Main does: over HTTPS, to
	// callers with a bearer token the API server authorizes (see
	// gopf.ManagerOptions.MetricsInsecure). Default: plain HTTP, so that
	// tests scrape without tokens.
	SecureMetrics bool
	// WatchInactivityTimeout restarts watches silent for this long (see
	// gopf.ManagerOptions.WatchInactivityTimeout). Default: 2 minutes.
	WatchInactivityTimeout time.Duration
	// WatchServerTimeout asks the API server to end every watch after this
	// long (see gopf.ManagerOptions.WatchServerTimeout). Default:
	// client-go's 5 to 10 minutes.
	WatchServerTimeout time.Duration
}

// Operator is a gopf operator running in this process on its own manager.
type Operator struct {
	// Manager is the operator's manager; its client reads from the cache.
	Manager manager.Manager

	cancel context.CancelFunc
	done   chan struct{} // closed when the manager has returned
	err    error         // what the manager returned

	// what Restart needs to run the same operator again
	cfg  *rest.Config
	reg  *handlers.Registry
	opts OperatorOptions
}

// Restart stops the operator and runs the same registry with the same
// options again on a new manager: what a process restart looks like to the
// objects.
//
// What survives is what a restarted process would find: everything in the
// API server (the objects, gopf's stored state and finalizers, Events,
// Leases). What goes is what a process keeps in memory: the operator's and
// the objects' memos (the new operator's memo starts again from
// OperatorOptions.Reconcile.Memo), the indexes (refilled from the initial
// list before any object handler runs), the cache, running timers and
// daemons (they start again; resume handlers run for handled objects).
//
// Unlike a new process, the registry survives too: its handler functions
// are the same values, so whatever they capture — variables of the test,
// counters, clients — keeps its value across the restart. Keep per-operator
// state that must not survive in the memo (Cause.Memo, which index
// functions get too), or start a fresh registry with RunOperator to model a
// process that rebuilds it.
func (op *Operator) Restart(ctx context.Context) (*Operator, error) {
	if err := op.Stop(); err != nil {
		return nil, fmt.Errorf("stopping the operator before the restart: %w", err)
	}
	return RunOperator(ctx, op.cfg, op.reg, op.opts)
}

// RunOperator sets reg up on a new manager for cfg and starts it. The
// manager is the one gopf.Main builds (see gopf.NewManager), with these
// differences for tests: the metrics and probe servers are off unless
// asked for (metrics in plain HTTP unless SecureMetrics), several
// operators of one registry may run in one process (for restart tests), and handlers are retried after DefaultBackoff. It
// returns once the caches are in sync, so objects created afterwards are
// seen as events. Stop it with Stop.
func RunOperator(ctx context.Context, cfg *rest.Config, reg *handlers.Registry, opts OperatorOptions) (*Operator, error) {
	opts, err := opts.withMain()
	if err != nil {
		return nil, err
	}
	origCfg, origOpts := cfg, opts
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.Scheme != nil {
		if err := completeScheme(opts.Scheme); err != nil {
			return nil, err
		}
	}
	if opts.Requests != nil {
		cfg = rest.CopyConfig(cfg)
		opts.Requests.Wrap(cfg)
	}
	engine := opts.Reconcile
	if len(opts.Namespaces) > 0 {
		if len(engine.Namespaces) > 0 {
			return nil, errors.New("OperatorOptions.Namespaces and OperatorOptions.Reconcile.Namespaces are both set: give one")
		}
		engine.Namespaces = opts.Namespaces
	}
	if engine.DefaultBackoff <= 0 {
		engine.DefaultBackoff = DefaultBackoff
	}
	mo := gopf.ManagerOptions{
		Scheme:                 opts.Scheme,
		Engine:                 engine,
		MetricsBindAddress:     opts.MetricsBindAddress,
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		MetricsInsecure:        !opts.SecureMetrics,
		WatchInactivityTimeout: opts.WatchInactivityTimeout,
		WatchServerTimeout:     opts.WatchServerTimeout,
		SkipNameValidation:     true,
	}
	if opts.Webhook != nil {
		mo.Webhook = *opts.Webhook
	}
	mgr, err := gopf.NewManager(cfg, reg, mo)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	op := &Operator{Manager: mgr, cancel: cancel, done: make(chan struct{}), cfg: origCfg, reg: reg, opts: origOpts}
	go func() {
		op.err = mgr.Start(runCtx)
		close(op.done)
	}()

	syncCtx, syncCancel := context.WithTimeout(runCtx, opts.StartTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		<-op.done
		return nil, errors.Join(fmt.Errorf("the operator's caches did not sync within %s", opts.StartTimeout), op.err)
	}
	return op, nil
}

// withMain returns opts with Main turned into the Scheme and Reconcile it
// stands for, and Main nil; opts as they are if Main is nil.
func (opts OperatorOptions) withMain() (OperatorOptions, error) {
	if opts.Main == nil {
		return opts, nil
	}
	if !reflect.ValueOf(opts.Reconcile).IsZero() {
		return opts, errors.New("OperatorOptions.Main and OperatorOptions.Reconcile are both set: give the engine's options in one of the two")
	}
	if len(opts.Main.AddToScheme) > 0 {
		if opts.Scheme != nil {
			return opts, errors.New("OperatorOptions.Scheme and OperatorOptions.Main.AddToScheme are both set: give one")
		}
		opts.Scheme = runtime.NewScheme()
		if err := addAll(opts.Scheme, opts.Main.AddToScheme); err != nil {
			return opts, err
		}
	}
	opts.Reconcile = opts.Main.Engine
	if len(opts.Namespaces) > 0 {
		opts.Reconcile.Namespaces = nil // overridden, as by --namespace
	}
	opts.Main = nil
	return opts, nil
}

// Stop stops the operator and waits until the manager has returned, which
// includes every running reconcile, and returns what the manager returned.
// Later calls return the same.
func (op *Operator) Stop() error {
	op.cancel()
	<-op.done
	return op.err
}

// Done is closed when the operator has stopped, by Stop or by itself (for
// example when a startup handler failed).
func (op *Operator) Done() <-chan struct{} { return op.done }

// Err returns why the operator stopped by itself, once Done is closed.
func (op *Operator) Err() error {
	select {
	case <-op.done:
		return op.err
	default:
		return nil
	}
}
