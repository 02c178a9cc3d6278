package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

// Flags are the operator's command-line flags: kubebuilder's cmd/main.go
// ones plus Kopf's. The exported ones are the manager's, which package gopf
// turns into its ManagerOptions (Program.NewManager); this package handles
// the others, for the engine, the log and the commands, itself.
type Flags struct {
	// MetricsAddr and ProbeAddr are --metrics-bind-address and
	// --health-probe-bind-address.
	MetricsAddr, ProbeAddr string
	// MetricsSecure and MetricsCertDir are --metrics-secure and
	// --metrics-cert-dir.
	MetricsSecure  bool
	MetricsCertDir string
	// LeaderElect and ElectionID are --leader-elect and
	// --leader-election-id.
	LeaderElect bool
	ElectionID  string
	// ShutdownTimeout is --graceful-shutdown-timeout.
	ShutdownTimeout time.Duration
	// Webhook are the webhook server's flags (webhook.Options.BindFlags).
	Webhook webhook.Options
	// QPS and Burst are --kube-api-qps and --kube-api-burst.
	QPS   float64
	Burst int
	// KeepManagedFields is --keep-managed-fields.
	KeepManagedFields bool
	// CacheUnselected is --cache-unselected.
	CacheUnselected bool
	// ReconciliationTimeout is --reconciliation-timeout.
	ReconciliationTimeout time.Duration
	// Warmup is --warmup.
	Warmup bool

	concurrency            int
	namespaces             multiFlag
	allNamespaces          bool
	peeringName, peeringNS string
	standalone, dev        bool
	stealth                bool
	priority               int
	lifetime               time.Duration
	logFormat              string
	watchInactivity        time.Duration
	watchServer            time.Duration
	releasePages           bool
	zap                    zap.Options
	rbac                   RBACFlags
	fs                     *flag.FlagSet // to tell the flags given from defaults
	kopfPrefix             string
	shardRing, shardName   string
	shardNamespace         string
	shardExternal          bool
}

// WatchDefaults are the defaults of the watch flags, from
// gopf.MainOptions.
type WatchDefaults struct {
	// Inactivity is the default of --watch-inactivity-timeout; 0: no bound.
	Inactivity time.Duration
	// Server is the default of --watch-server-timeout; 0: client-go's.
	Server time.Duration
}

// NewFlags defines the operator's flags on a flag set of the program name,
// with the watch flags' defaults from watch.
func NewFlags(name string, watch WatchDefaults) (*flag.FlagSet, *Flags) {
	f := &Flags{zap: zap.Options{Development: true}}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f.fs = fs
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to (e.g. :8443); 0 disables it. Probe results are served there at /probes.")
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", true, "Serve metrics (and /probes) over HTTPS to callers whose bearer token the API server authenticates and authorizes (get on the path); false serves plain HTTP to anyone.")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", "", "A directory with tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change. Default: a self-signed certificate.")
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoints (/healthz, /readyz) bind to; 0 disables them.")
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "Enable Lease-based leader election, so that only one replica handles objects at a time.")
	fs.StringVar(&f.ElectionID, "leader-election-id", name+".gopf.dev", "The name of the Lease used for leader election.")
	fs.IntVar(&f.concurrency, "max-concurrent-reconciles", 16, "How many objects of one kind are handled at once.")
	fs.Var(&f.namespaces, "namespace", "Namespaces to handle: names or patterns with * and ?, a leading ! excludes (e.g. 'app-*,!app-pr-*'); repeatable. Default: all namespaces.")
	fs.Var(&f.namespaces, "n", "Short for --namespace.")
	fs.BoolVar(&f.allNamespaces, "all-namespaces", false, "Handle all namespaces (the default when no --namespace is given).")
	fs.BoolVar(&f.allNamespaces, "A", false, "Short for --all-namespaces.")
	fs.StringVar(&f.peeringName, "peering", "", "Take part in the peering of this name: only the live operator with the highest priority works, and the operator pauses while the peering object does not exist. Default: the peering named default if its object exists, else none. With --namespace, the KopfPeering in each served namespace; else the ClusterKopfPeering.")
	fs.StringVar(&f.peeringName, "P", "", "Short for --peering.")
	fs.StringVar(&f.peeringNS, "peering-namespace", "", "Use the KopfPeering in this one namespace instead.")
	fs.BoolVar(&f.standalone, "standalone", false, "Do not take part in peering, even with --peering.")
	fs.BoolVar(&f.stealth, "peering-stealth", false, "Take part in peering without announcing this operator: write nothing to the peering object, and pause while any other peer is alive.")
	fs.BoolVar(&f.dev, "dev", false, fmt.Sprintf("Development run: peering priority %d, so that this operator pauses the one deployed in the cluster.", reconcile.DevPriority))
	fs.IntVar(&f.priority, "priority", 0, "Peering priority of this operator.")
	fs.IntVar(&f.priority, "p", 0, "Short for --priority.")
	fs.DurationVar(&f.lifetime, "peering-lifetime", time.Minute, "How long this operator's peering entry lives unless renewed.")
	fs.StringVar(&f.kopfPrefix, "kopf-prefix", "", "The annotation prefix of the Kopf operator this one takes over from, whose state it continues (default "+reconcile.DefaultKopfPrefix+").")
	fs.StringVar(&f.logFormat, "log-format", "text", "Log format: text or json.")
	fs.Float64Var(&f.QPS, "kube-api-qps", 500, "Ceiling on the requests per second the operator sends to the API server (client-side); a bound on any retry storm.")
	fs.IntVar(&f.Burst, "kube-api-burst", 1000, "Burst above --kube-api-qps the operator may send.")
	fs.DurationVar(&f.watchInactivity, "watch-inactivity-timeout", watch.Inactivity, "Restart a watch that has delivered nothing, not even a bookmark, for this long, from the last version seen; 0: no bound.")
	fs.DurationVar(&f.watchServer, "watch-server-timeout", watch.Server, "Ask the API server to end every watch after this long (whole seconds); the watch then starts again from the last version seen. 0: client-go's random 5 to 10 minutes.")
	fs.DurationVar(&f.ShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long a graceful stop may take before the operator exits anyway.")
	fs.DurationVar(&f.ReconciliationTimeout, "reconciliation-timeout", 0, "Cancel the context of a reconcile's handlers after this long; they are retried as after an error. 0: no bound.")
	fs.BoolVar(&f.Warmup, "warmup", false, "With --leader-elect, fill the cache before this replica leads, so that it takes over without listing every object first (costs a standby its cache's memory and watches).")
	fs.BoolVar(&f.releasePages, "release-startup-pages", runtime.GOOS == "linux", "Once start-up is over, have the kernel drop the pages of the operator's binary that start-up mapped (Linux): about 20 MiB less resident memory; code used afterwards is read back from the file.")
	fs.BoolVar(&f.KeepManagedFields, "keep-managed-fields", false, "Keep metadata.managedFields on cached objects (by default they are dropped to save memory; handlers that read them need this).")
	fs.BoolVar(&f.CacheUnselected, "cache-unselected", false, "Cache every object of each handled kind, filtering by the handlers' labels in memory (by default a kind whose handlers all select on labels is watched with that label selector; code that reads other objects of it through the manager's client needs this; see docs/narrowed-cache.md).")
	fs.StringVar(&f.shardRing, "shard-ring", "", "Make this replica a shard of the ring of this name: the replicas share the objects, each handles those labelled for it (see docs/sharding.md). Not with --leader-elect.")
	fs.StringVar(&f.shardName, "shard-name", "", "This replica's shard name (its Lease's name). Default: the host name, which is the Pod's name.")
	fs.BoolVar(&f.shardExternal, "shard-external-assigner", false, "Leave assigning objects to shards to the sharder of timebertt/kubernetes-controller-sharding running in the cluster, instead of electing a replica to do it.")
	fs.StringVar(&f.shardNamespace, "shard-namespace", "", "The namespace of the ring's Leases. Default: $POD_NAMESPACE, else the namespace of the Pod's service account.")
	f.zap.BindFlags(fs)
	f.Webhook.BindFlags(fs)
	f.rbac.Bind(fs)
	return fs, f
}

// check reports flags that contradict each other, and namespace patterns
// that do not parse.
func (f *Flags) check() error {
	if f.allNamespaces && len(f.namespaces) > 0 {
		return errors.New("give --namespace or --all-namespaces, not both")
	}
	if !f.MetricsSecure && f.MetricsCertDir != "" {
		return errors.New("--metrics-cert-dir needs --metrics-secure (HTTPS)")
	}
	if f.watchInactivity < 0 {
		return errors.New("--watch-inactivity-timeout cannot be negative (0 turns the bound off)")
	}
	if f.watchServer < 0 {
		return errors.New("--watch-server-timeout cannot be negative (0 leaves it to client-go)")
	}
	if f.ReconciliationTimeout < 0 {
		return errors.New("--reconciliation-timeout cannot be negative (0 turns the bound off)")
	}
	if f.shardRing != "" && f.LeaderElect {
		return errors.New("--shard-ring and --leader-elect exclude each other: every shard of a ring works")
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return fmt.Errorf("--log-format is text or json, not %q", f.logFormat)
	}
	_, err := scope.CacheNamespaces(f.namespaces) // a bad pattern is reported before the cluster is looked for
	return err
}

// EngineOptions sets the engine's options that the flags govern.
func (f *Flags) EngineOptions(opts reconcile.Options) reconcile.Options {
	opts.MaxConcurrentReconciles = f.concurrency
	if f.kopfPrefix != "" {
		opts.KopfPrefix = f.kopfPrefix
	}
	if len(f.namespaces) > 0 {
		opts.Namespaces = f.namespaces
	}
	opts.Sharding = f.sharding(opts.Sharding)
	switch {
	case f.standalone:
		opts.Peering = nil
	case f.peeringName == "" && opts.Peering != nil:
		// The peering set in code, with the peering flags given on the
		// command line over it.
		p := *opts.Peering
		f.fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "peering-namespace":
				p.Namespace = f.peeringNS
			case "priority", "p":
				p.Priority = f.priority
			case "peering-lifetime":
				p.Lifetime = f.lifetime
			case "peering-stealth":
				p.Stealth = f.stealth
			}
		})
		if f.dev {
			p.Priority = reconcile.DevPriority
		}
		opts.Peering = &p
	default:
		// As Kopf: without --peering, the peering named default if its
		// object exists (Optional), else none.
		p := &reconcile.PeeringOptions{Name: f.peeringName, Namespace: f.peeringNS, Priority: f.priority, Lifetime: f.lifetime, Stealth: f.stealth}
		if p.Name == "" {
			p.Name, p.Optional = "default", true
		}
		p.PerNamespace = p.Namespace == "" && len(f.namespaces) > 0
		if f.dev {
			p.Priority = reconcile.DevPriority
		}
		opts.Peering = p
	}
	return opts
}

// sharding is the sharding set in code, if any, with the sharding flags
// given over the fields they govern, or the sharding the flags describe
// alone (nil without --shard-ring or sharding in code). Without a
// namespace from either, the ring's Leases go to the Pod's namespace.
func (f *Flags) sharding(code *reconcile.Sharding) *reconcile.Sharding {
	if code == nil && f.shardRing == "" {
		return nil
	}
	var s reconcile.Sharding
	if code != nil {
		s = *code
	}
	if f.shardRing != "" {
		s.Ring = f.shardRing
	}
	if f.shardName != "" {
		s.Shard = f.shardName
	}
	if f.shardNamespace != "" {
		s.Namespace = f.shardNamespace
	}
	s.ExternalAssigner = s.ExternalAssigner || f.shardExternal
	if s.Namespace == "" {
		s.Namespace = podNamespace()
	}
	return &s
}

// checkSharding reports an operator sharded by --shard-ring, or in code,
// that has no namespace for its ring's Leases, naming the flag that gives
// one, before the cluster is looked for. --print-rbac and --check-rbac
// hold no Lease and need none.
func (f *Flags) checkSharding(code *reconcile.Sharding) error {
	if f.rbac.Given() {
		return nil
	}
	if s := f.sharding(code); s != nil && s.Namespace == "" {
		return errors.New("--shard-namespace is needed: the namespace of the ring's Leases " +
			"(default: $POD_NAMESPACE, else the namespace of the Pod's service account; neither is there)")
	}
	return nil
}

// explain names the flag whose value an error of the operator's start
// comes from, where the error cannot: a shard namespace that does not
// exist, given by --shard-namespace or by its default.
func (f *Flags) explain(err error) error {
	var missing *shard.NamespaceNotFoundError
	switch {
	case !errors.As(err, &missing):
		return err
	case f.shardNamespace != "":
		return fmt.Errorf("--shard-namespace: %w", missing)
	default:
		return fmt.Errorf("%w; it is the default of --shard-namespace, from $POD_NAMESPACE or the Pod's service account: give an existing one", missing)
	}
}

// WatchInactivityTimeout is --watch-inactivity-timeout as
// gopf.ManagerOptions.WatchInactivityTimeout, whose zero is the default and
// whose "no bound" is negative.
func (f *Flags) WatchInactivityTimeout() time.Duration {
	if f.watchInactivity == 0 {
		return -1
	}
	return f.watchInactivity
}

// WatchServerTimeout is --watch-server-timeout as
// gopf.ManagerOptions.WatchServerTimeout.
func (f *Flags) WatchServerTimeout() time.Duration { return f.watchServer }

// encoder picks the log format.
func (f *Flags) encoder() zap.Opts {
	return func(o *zap.Options) {
		if f.logFormat == "json" {
			o.Development = false
			o.NewEncoder = func(eo ...zap.EncoderConfigOption) zapcore.Encoder {
				cfg := zapcore.EncoderConfig{
					TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg", StacktraceKey: "stacktrace",
					EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
				}
				for _, opt := range eo {
					opt(&cfg)
				}
				return zapcore.NewJSONEncoder(cfg)
			}
		}
	}
}

// multiFlag is a repeatable flag whose values may also be comma-separated.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}

// serviceAccountNamespace is where a Pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is the namespace the operator runs in: $POD_NAMESPACE
// (the downward API), else its service account's, else "".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
