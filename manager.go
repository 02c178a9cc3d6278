package gopf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/operator"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/transport"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

// ManagerOptions configure NewManager. The zero value gives the manager that
// Main builds when no flags are given, except that the metrics and health
// probe servers are off.
type ManagerOptions struct {
	// Scheme knows the Go types of the handlers. Default: client-go's
	// scheme of built-in kinds.
	Scheme *runtime.Scheme

	// Engine are the engine's options. Engine.Namespaces limits both the
	// engine (which namespaces' objects are handled) and the manager's
	// cache (what is watched): the cache to exactly those namespaces when
	// they are all plain names, to the whole cluster when there are globs or
	// negations, so that namespaces created later are picked up.
	Engine reconcile.Options

	// QPS and Burst cap the requests the manager's clients, together, send
	// per second (client-side rate limit, one token bucket). Zero keeps the
	// rest.Config's value; a negative QPS lifts the limit. Main sets them from --kube-api-qps and
	// --kube-api-burst (500 and 1000).
	QPS   float32
	Burst int

	// MetricsBindAddress is where the metrics endpoint (and the probe
	// results at /probes) listens, such as ":8443". "" or "0": off.
	MetricsBindAddress string
	// MetricsInsecure serves /metrics and /probes over plain HTTP to anyone
	// who reaches the port. By default (false) they are served over HTTPS
	// (HTTP/1.1 only), and every request must carry a bearer token that the
	// API server authenticates (a TokenReview) and authorizes (a
	// SubjectAccessReview for get on the path as a non-resource URL), as
	// kubebuilder's --metrics-secure does; the operator then needs create
	// on tokenreviews and subjectaccessreviews (config/rbac's
	// metrics-auth-role), and scrapers get on /metrics and /probes
	// (config/rbac's metrics-reader role).
	MetricsInsecure bool
	// MetricsCertDir holds the HTTPS metrics endpoint's certificate and
	// key, as tls.crt and tls.key, reloaded when they change. Default: a
	// self-signed certificate made at start (scrapers then skip verifying
	// it, as Prometheus's kubebuilder ServiceMonitor does). Setting it with
	// MetricsInsecure is an error.
	MetricsCertDir string
	// HealthProbeBindAddress is where /healthz and /readyz listen, such as
	// ":8081". "" or "0": off.
	HealthProbeBindAddress string

	// WatchInactivityTimeout ends a watch that has delivered nothing, not
	// even a bookmark, for this long; the informer then watches again from
	// the last resourceVersion it saw, and what changed meanwhile is
	// handled. This bounds how long a silently stalled stream (a proxy or
	// load balancer that lost its way to the API server but keeps the
	// connection) leaves the operator blind, as Kopf's
	// settings.watching.inactivity_timeout does. Watches that deliver
	// events or bookmarks cost nothing more. The API server's watch cache
	// sends idle watches a bookmark only when the cluster's resourceVersion
	// has moved on as far as the cache knows, so a watch of a kind nobody
	// writes to may get nothing for longer than the bound: it is then
	// opened again once per bound (one request, from the last
	// resourceVersion, never a list; measured in envtest: one WATCH in
	// 150 s of idleness). Default (0): 2 minutes. Negative: no bound; a
	// silent stream then lasts until the API server ends the watch (client-go
	// asks for 5 to 10 minutes).
	WatchInactivityTimeout time.Duration

	// WatchServerTimeout asks the API server to end every watch after this
	// long (the watch request's timeoutSeconds, in whole seconds), as
	// Kopf's settings.watching.server_timeout does; the informer then
	// watches again from the last resourceVersion it saw. Default (0):
	// client-go's, a random 5 to 10 minutes per watch, which spreads the
	// renewals of many watches. Negative is an error.
	WatchServerTimeout time.Duration

	// LeaderElection makes the manager work only while it holds the Lease
	// LeaderElectionID, and hand it over when it stops gracefully.
	LeaderElection   bool
	LeaderElectionID string

	// GracefulShutdownTimeout bounds a graceful stop; negative: no bound.
	// Default (nil): 30 s.
	GracefulShutdownTimeout *time.Duration

	// Webhook configures the webhook server that serves the registry's
	// admission handlers and adds gopf's finalizers at admission; a
	// registry without admission handlers gets none, unless
	// Webhook.Finalizers is webhook.FinalizersAlways. The zero value is
	// dev mode (see webhook.Options).
	Webhook webhook.Options

	// KeepManagedFields keeps metadata.managedFields on the objects in the
	// manager's cache. By default they are dropped as objects enter the
	// cache (cache.TransformStripManagedFields): they are often the largest
	// part of a small object and nothing in gopf reads them, so dropping
	// them saves memory on every cached object. Set it if your handlers
	// read managedFields from the objects they are given. Main sets it from
	// --keep-managed-fields.
	KeepManagedFields bool

	// CacheUnselected caches every object of each handled kind. By
	// default, a kind whose handlers all select on labels that the API
	// server can evaluate (an exact value, Present, Absent; see
	// handlers.Labels) is watched with the label selector they all imply,
	// so that objects no handler can select never reach the operator's
	// memory (docs/narrowed-cache.md). The manager's client
	// then reads those kinds from that narrowed cache too: set it if your
	// code reads, through the manager's client, objects of a handled kind
	// that its handlers' labels do not select. A shard's own cache (see
	// reconcile.Sharding), which only gopf reads, is narrowed either way.
	// --cache-unselected.
	CacheUnselected bool

	// ReconciliationTimeout bounds each Reconcile of gopf's controllers
	// (controller-runtime's controller option of that name): the context
	// the change, level and resume handlers of that reconcile get is
	// cancelled once it is over, their outcome is still written, and a
	// handler that returned the context's error is retried as after any
	// error. A hung handler that honours its context then holds a worker
	// for at most this long. Timers and daemons run outside Reconcile and
	// keep their own bounds. Default (0): no bound. Negative is an error.
	// Main sets it from --reconciliation-timeout.
	ReconciliationTimeout time.Duration

	// Warmup starts the informers of gopf's controllers before this replica
	// holds the leader-election Lease (controller-runtime's EnableWarmup),
	// so that a standby replica takes over with its cache already filled
	// instead of listing every object first. It costs each standby the
	// cache's memory and watches. Controllers of kinds whose CRD appears
	// after start are not warmed. Without LeaderElection it changes
	// nothing. Main sets it from --warmup.
	Warmup bool

	// SkipNameValidation lets several managers in one process add
	// controllers of the same names, as tests that run one registry
	// several times (or restart it) do. Operators leave it false.
	SkipNameValidation bool
}

// NewManager builds the manager that Main runs, with the handlers of reg
// added: a cache of the namespaces in opts.Engine.Namespaces, a client that
// reads through the cache (unstructured objects too), gopf's webhook server
// if reg has admission handlers, and health and readiness checks. Start it
// with its Start method. envtest.RunOperator builds its managers here too,
// so that tests run the operator as Main would.
//
// To add gopf's handlers to a manager built otherwise, use SetupWithManager.
func NewManager(cfg *rest.Config, reg *handlers.Registry, opts ManagerOptions) (manager.Manager, error) {
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	if opts.ReconciliationTimeout < 0 {
		return nil, errors.New("gopf: ReconciliationTimeout cannot be negative")
	}
	if opts.WatchServerTimeout < 0 {
		return nil, errors.New("gopf: WatchServerTimeout cannot be negative (0 leaves it to client-go)")
	}
	if s := opts.Engine.Sharding; s != nil {
		if opts.LeaderElection {
			return nil, errors.New("gopf: Engine.Sharding and LeaderElection exclude each other: every shard of a ring works")
		}
		sharding := *s
		sharding.KeepManagedFields = sharding.KeepManagedFields || opts.KeepManagedFields
		opts.Engine.Sharding = &sharding
	}
	cacheNamespaces, err := scope.CacheNamespaces(opts.Engine.Namespaces)
	if err != nil {
		return nil, err
	}
	metrics, err := metricsOptions(opts)
	if err != nil {
		return nil, err
	}
	var webhookServer *webhook.Server
	if webhook.Needed(reg) || opts.Webhook.Finalizers == webhook.FinalizersAlways {
		if webhookServer, err = webhook.NewServer(opts.Webhook); err != nil {
			return nil, err
		}
	}
	mo := controllerManagerOptions(opts, operator.CacheOptions(cacheNamespaces, opts.KeepManagedFields), metrics, webhookServer)
	if !opts.CacheUnselected {
		mo.NewCache = operator.NarrowingCache(reg)
	}
	mgr, err := ctrl.NewManager(clientConfig(cfg, opts), mo)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := SetupWithManager(mgr, reg, opts.Engine); err != nil {
		return nil, err
	}
	if webhookServer != nil && !webhook.Needed(reg) {
		// The server runs for the finalizer webhook alone.
		if err := webhook.SetupFinalizers(mgr, reg); err != nil {
			return nil, err
		}
	}
	if err := addChecks(mgr, webhookServer); err != nil {
		return nil, err
	}
	return mgr, nil
}

// clientConfig is a copy of cfg with the client-side rate limit and the
// bound on silent watches that opts ask for.
func clientConfig(cfg *rest.Config, opts ManagerOptions) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if opts.QPS != 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst != 0 {
		cfg.Burst = opts.Burst
	}
	if cfg.QPS > 0 && cfg.RateLimiter == nil {
		// One bucket for all of the manager's clients (typed, unstructured,
		// metadata; every kind), so that the ceiling holds for the operator
		// as a whole rather than per client and kind.
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	inactivity := opts.WatchInactivityTimeout
	if inactivity == 0 {
		inactivity = transport.DefaultWatchInactivityTimeout
	}
	transport.BoundWatches(cfg, inactivity, opts.WatchServerTimeout)
	return cfg
}

// controllerManagerOptions are the options NewManager gives
// controller-runtime's manager; webhookServer is nil when the registry has no
// admission handlers.
func controllerManagerOptions(opts ManagerOptions, cacheOpts cache.Options, metrics metricsserver.Options, webhookServer *webhook.Server) ctrl.Options {
	mo := ctrl.Options{
		WebhookServer:          serverOrNil(webhookServer),
		Scheme:                 opts.Scheme,
		Cache:                  cacheOpts,
		Metrics:                metrics,
		HealthProbeBindAddress: offIfEmpty(opts.HealthProbeBindAddress),
		LeaderElection:         opts.LeaderElection,
		LeaderElectionID:       opts.LeaderElectionID,
		// Handing over on a graceful stop, not after the lease expires.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       opts.GracefulShutdownTimeout,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	mo.Controller = config.Controller{ReconciliationTimeout: opts.ReconciliationTimeout}
	if opts.SkipNameValidation {
		mo.Controller.SkipNameValidation = ptr.To(true)
	}
	if opts.Warmup {
		mo.Controller.EnableWarmup = ptr.To(true)
	}
	return mo
}

// addChecks adds the health and readiness checks: pings, and readiness of
// the webhook server once it serves, when there is one.
func addChecks(mgr manager.Manager, webhookServer *webhook.Server) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if webhookServer != nil {
		return mgr.AddReadyzCheck("webhook", webhookServer.StartedChecker())
	}
	return nil
}

// SetupWithManager adds the handlers of reg to a manager the caller already
// has, next to its own Reconcilers. The manager's client should cache
// unstructured objects if unstructured handlers are registered; gopf itself
// reads through the manager's cache either way.
//
// Admission handlers are served by the manager's webhook server: build it
// with webhook.NewServer to have gopf manage certificates and webhook
// configurations, or keep a plain controller-runtime server (certificates
// from cert-manager, static configurations).
//
// When the manager starts, SetupWithManager checks once that the
// manager's user may do what the handlers need (see CheckPermissions) and
// logs what is missing, as the ClusterRole --print-rbac writes and as
// kubebuilder markers; the manager starts either way, and a failure to ask
// is logged, not fatal. To stop instead, call CheckPermissions before
// starting the manager.
//
// With opts' Sharding, SetupWithManager first checks that the namespace
// of the ring's Leases exists (a dry-run create of a Lease, which the
// shard's Lease needs permission for anyway), and fails if it does not.
//
// opts, if given, are the engine's options (storage, backoff, memo, ...).
func SetupWithManager(mgr manager.Manager, reg *handlers.Registry, opts ...reconcile.Options) error {
	var o reconcile.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := checkShardNamespace(mgr, o.Sharding); err != nil {
		return err
	}
	if err := reconcile.Setup(mgr, reg, o); err != nil {
		return err
	}
	if err := mgr.Add(permissionCheck{mgr: mgr, reg: reg, opts: o}); err != nil {
		return err
	}
	return webhook.Setup(mgr, reg)
}

// shardNamespaceCheckTimeout bounds checkShardNamespace's one request.
const shardNamespaceCheckTimeout = 30 * time.Second

// checkShardNamespace fails when the namespace of the ring's Leases does
// not exist (see shard.CheckNamespace): the replica would otherwise try to
// create its Lease there every few seconds and never join. An empty
// namespace is left to reconcile.Setup, which refuses it.
func checkShardNamespace(mgr manager.Manager, s *reconcile.Sharding) error {
	if s == nil || s.Namespace == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("gopf: a client for the shard's Lease: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shardNamespaceCheckTimeout)
	defer cancel()
	if err := shard.CheckNamespace(ctx, cs.CoordinationV1(), s.Namespace); err != nil {
		return fmt.Errorf("gopf: Sharding.Namespace: %w", err)
	}
	return nil
}

// metricsOptions are the metrics server's options: HTTPS with
// authentication and authorization unless opts.MetricsInsecure.
func metricsOptions(opts ManagerOptions) (metricsserver.Options, error) {
	mo := metricsserver.Options{BindAddress: offIfEmpty(opts.MetricsBindAddress)}
	if opts.MetricsInsecure {
		if opts.MetricsCertDir != "" {
			return mo, errors.New("a metrics certificate directory is set, but metrics are served over plain HTTP: drop one of the two")
		}
		return mo, nil
	}
	mo.SecureServing = true
	mo.CertDir = opts.MetricsCertDir
	mo.FilterProvider = transport.MetricsAuth
	// HTTP/2 stays off, as in kubebuilder's scaffold: its stream
	// multiplexing made the endpoint open to rapid-reset attacks
	// (CVE-2023-44487) for nothing a scraper needs.
	mo.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return mo, nil
}

// serverOrNil keeps a nil *webhook.Server from becoming a non-nil interface,
// so that the manager falls back to its default (never started) server.
func serverOrNil(s *webhook.Server) ctrlwebhook.Server {
	if s == nil {
		return nil
	}
	return s
}

// offIfEmpty turns an unset bind address into controller-runtime's "off".
func offIfEmpty(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}
