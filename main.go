package gopf

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

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
// opts, if given, are the engine's options (storage, backoff, memo, ...).
func SetupWithManager(mgr manager.Manager, reg *handlers.Registry, opts ...reconcile.Options) error {
	var o reconcile.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := reconcile.Setup(mgr, reg, o); err != nil {
		return err
	}
	if err := mgr.Add(permissionCheck{mgr: mgr, reg: reg, opts: o}); err != nil {
		return err
	}
	return webhook.Setup(mgr, reg)
}

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

// flags are Main's command-line flags: kubebuilder's cmd/main.go ones plus
// Kopf's.
type flags struct {
	metricsAddr, probeAddr string
	metricsSecure          bool
	metricsCertDir         string
	leaderElect            bool
	electionID             string
	concurrency            int
	namespaces             multiFlag
	allNamespaces          bool
	peeringName, peeringNS string
	standalone, dev        bool
	stealth                bool
	priority               int
	lifetime               time.Duration
	logFormat              string
	shutdownTimeout        time.Duration
	watchInactivity        time.Duration
	zap                    zap.Options
	webhook                webhook.Options
	printRBAC              rbacFormat
	checkRBAC              string
	qps                    float64
	fs                     *flag.FlagSet // to tell the flags given from defaults
	burst                  int
	kopfPrefix             string
	keepManagedFields      bool
}

func newFlags(name string) (*flag.FlagSet, *flags) {
	f := &flags{zap: zap.Options{Development: true}}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f.fs = fs
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to (e.g. :8443); 0 disables it. Probe results are served there at /probes.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "Serve metrics (and /probes) over HTTPS to callers whose bearer token the API server authenticates and authorizes (get on the path); false serves plain HTTP to anyone.")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "A directory with tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change. Default: a self-signed certificate.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoints (/healthz, /readyz) bind to; 0 disables them.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Enable Lease-based leader election, so that only one replica handles objects at a time.")
	fs.StringVar(&f.electionID, "leader-election-id", name+".gopf.dev", "The name of the Lease used for leader election.")
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
	fs.Float64Var(&f.qps, "kube-api-qps", 500, "Ceiling on the requests per second the operator sends to the API server (client-side); a bound on any retry storm.")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "Burst above --kube-api-qps the operator may send.")
	fs.DurationVar(&f.watchInactivity, "watch-inactivity-timeout", DefaultWatchInactivityTimeout, "Restart a watch that has delivered nothing, not even a bookmark, for this long, from the last version seen; 0: no bound.")
	fs.DurationVar(&f.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long a graceful stop may take before the operator exits anyway.")
	fs.BoolVar(&f.keepManagedFields, "keep-managed-fields", false, "Keep metadata.managedFields on cached objects (by default they are dropped to save memory; handlers that read them need this).")
	f.zap.BindFlags(fs)
	f.webhook.BindFlags(fs)
	fs.Var(&f.printRBAC, "print-rbac", "Print the permissions the handlers need and exit: as a ClusterRole (manager-role-gopf) in YAML, or with --print-rbac=markers as kubebuilder RBAC markers for a project's controller file.")
	fs.StringVar(&f.checkRBAC, "check-rbac", "", "Check that the Roles and ClusterRoles in this YAML file grant what the handlers need; print what is missing and exit, with status 1 if anything is.")
	return fs, f
}

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

// check reports flags that contradict each other, and namespace patterns
// that do not parse.
func (f *flags) check() error {
	if f.allNamespaces && len(f.namespaces) > 0 {
		return errors.New("give --namespace or --all-namespaces, not both")
	}
	if !f.metricsSecure && f.metricsCertDir != "" {
		return errors.New("--metrics-cert-dir needs --metrics-secure (HTTPS)")
	}
	if f.watchInactivity < 0 {
		return errors.New("--watch-inactivity-timeout cannot be negative (0 turns the bound off)")
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return fmt.Errorf("--log-format is text or json, not %q", f.logFormat)
	}
	_, err := reconcile.CacheNamespaces(f.namespaces) // a bad pattern is reported before the cluster is looked for
	return err
}

// engineOptions sets the engine's options that the flags govern.
func (f *flags) engineOptions(opts reconcile.Options) reconcile.Options {
	opts.MaxConcurrentReconciles = f.concurrency
	if f.kopfPrefix != "" {
		opts.KopfPrefix = f.kopfPrefix
	}
	if len(f.namespaces) > 0 {
		opts.Namespaces = f.namespaces
	}
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

// managerOptions are the manager's options that the flags govern.
// controller-runtime leaves the client unthrottled; gopf sets a ceiling
// (--kube-api-qps) high enough not to slow normal work and low enough to
// stop a storm.
func (f *flags) managerOptions(scheme *runtime.Scheme, engine reconcile.Options) ManagerOptions {
	return ManagerOptions{
		Scheme:                  scheme,
		Engine:                  f.engineOptions(engine),
		QPS:                     float32(f.qps),
		Burst:                   f.burst,
		MetricsBindAddress:      f.metricsAddr,
		MetricsInsecure:         !f.metricsSecure,
		MetricsCertDir:          f.metricsCertDir,
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        f.electionID,
		GracefulShutdownTimeout: &f.shutdownTimeout,
		WatchInactivityTimeout:  f.watchInactivityTimeout(),
		Webhook:                 f.webhook,
		KeepManagedFields:       f.keepManagedFields,
	}
}

// watchInactivityTimeout is --watch-inactivity-timeout as
// ManagerOptions.WatchInactivityTimeout, whose zero is the default and
// whose "no bound" is negative.
func (f *flags) watchInactivityTimeout() time.Duration {
	if f.watchInactivity == 0 {
		return -1
	}
	return f.watchInactivity
}

// encoder picks the log format.
func (f *flags) encoder() zap.Opts {
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

// rbac implements --print-rbac and --check-rbac, writing to w; it needs no
// cluster.
func rbac(w io.Writer, reg *handlers.Registry, scheme *runtime.Scheme, f *flags) error {
	rules, err := reconcile.Permissions(reg, scheme, nil)
	if err != nil {
		return err
	}
	if f.printRBAC != "" {
		// Leader election is granted by its own namespaced Role; a
		// ClusterRole would let the operator write any Lease.
		rules = reconcile.WithoutLeaderElection(rules)
		if f.printRBAC == rbacMarkers {
			_, err = io.WriteString(w, reconcile.KubebuilderMarkers(rules))
			return err
		}
		out, err := reconcile.ClusterRoleYAML("manager-role-gopf", rules)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	data, err := os.ReadFile(f.checkRBAC)
	if err != nil {
		return fmt.Errorf("--check-rbac: %w", err)
	}
	granted, err := reconcile.GrantedRules(data)
	if err != nil {
		return fmt.Errorf("--check-rbac %s: %w", f.checkRBAC, err)
	}
	if missing := reconcile.MissingPermissions(rules, granted); len(missing) > 0 {
		return fmt.Errorf("%s lacks %d permissions the handlers need:\n  %s", f.checkRBAC, len(missing), strings.Join(missing, "\n  "))
	}
	fmt.Fprintf(w, "%s grants everything the handlers need\n", f.checkRBAC)
	return nil
}

// rbacFormat is the value of --print-rbac: "" (do not print), rbacYAML
// (--print-rbac alone) or rbacMarkers.
type rbacFormat string

const (
	rbacYAML    rbacFormat = "yaml"
	rbacMarkers rbacFormat = "markers"
)

func (r *rbacFormat) String() string { return string(*r) }

// Set takes yaml or markers, and true (the flag alone) for yaml.
func (r *rbacFormat) Set(v string) error {
	switch v {
	case "true", string(rbacYAML):
		*r = rbacYAML
	case string(rbacMarkers):
		*r = rbacMarkers
	case "false":
		*r = ""
	default:
		return fmt.Errorf("--print-rbac is yaml or markers, not %q", v)
	}
	return nil
}

// IsBoolFlag lets --print-rbac stand alone.
func (r *rbacFormat) IsBoolFlag() bool { return true }

// runFreeze implements the freeze and resume commands.
func runFreeze(name, command string, args []string) error {
	fc, err := parseFreeze(name, command, args)
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	return fc.do(ctrl.SetupSignalHandler(), c)
}

// freezeCommand is a parsed freeze or resume command: which peering
// objects it writes to (Kopf's -n/-A: the KopfPeering in each matching
// namespace, else the ClusterKopfPeering) and what.
type freezeCommand struct {
	resume     bool
	peering    string
	namespaces []string
	freeze     reconcile.FreezeOptions
}

// parseFreeze reads the flags of freeze and resume, which are Kopf's.
func parseFreeze(name, command string, args []string) (*freezeCommand, error) {
	fs := flag.NewFlagSet(name+" "+command, flag.ContinueOnError)
	fc := &freezeCommand{resume: command == "resume"}
	var namespaces multiFlag
	var all, dev bool
	lifetime := secondsFlag(-1)
	fs.StringVar(&fc.peering, "peering", "", "The peering to "+command+" (required).")
	fs.StringVar(&fc.peering, "P", "", "Short for --peering.")
	fs.Var(&namespaces, "namespace", "Write to the KopfPeering in each namespace matching these patterns (as the operator's --namespace); repeatable. Default: the ClusterKopfPeering.")
	fs.Var(&namespaces, "n", "Short for --namespace.")
	fs.BoolVar(&all, "all-namespaces", false, "Write to the ClusterKopfPeering (the default).")
	fs.BoolVar(&all, "A", false, "Short for --all-namespaces.")
	fs.StringVar(&fc.freeze.Identity, "id", "freeze@"+hostname(), "The identity the freeze is written under; resume removes the entry of this identity.")
	fs.StringVar(&fc.freeze.Identity, "i", "freeze@"+hostname(), "Short for --id.")
	if !fc.resume {
		fs.Var(&lifetime, "lifetime", "How long the operators stay paused: seconds, as Kopf takes it, or a duration such as 10m (required).")
		fs.Var(&lifetime, "t", "Short for --lifetime.")
		fs.IntVar(&fc.freeze.Priority, "priority", 100, "The priority of the freeze; operators below it pause.")
		fs.IntVar(&fc.freeze.Priority, "p", 100, "Short for --priority.")
		fs.BoolVar(&dev, "dev", false, fmt.Sprintf("Freeze with priority %d, as a development run has.", reconcile.DevPriority))
		fs.StringVar(&fc.freeze.Message, "message", "", "Why: written into the peering entry and shown in the paused operators' logs.")
		fs.StringVar(&fc.freeze.Message, "m", "", "Short for --message.")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%s: unexpected arguments %q", command, fs.Args())
	case fc.peering == "":
		return nil, errors.New(command + " needs --peering")
	case all && len(namespaces) > 0:
		return nil, errors.New("give --namespace or --all-namespaces, not both")
	case !fc.resume && lifetime < 0:
		return nil, errors.New("freeze needs --lifetime")
	}
	if _, err := reconcile.CacheNamespaces(namespaces); err != nil {
		return nil, err
	}
	fc.namespaces = namespaces
	fc.freeze.Lifetime = time.Duration(lifetime)
	if dev {
		fc.freeze.Priority = reconcile.DevPriority
	}
	return fc, nil
}

// do writes the freeze, or removes it.
func (fc *freezeCommand) do(ctx context.Context, c client.Client) error {
	if fc.resume {
		return reconcile.Unfreeze(ctx, c, fc.peering, fc.namespaces, fc.freeze.Identity)
	}
	return reconcile.Freeze(ctx, c, fc.peering, fc.namespaces, fc.freeze)
}

// secondsFlag is a duration given as Kopf's whole seconds ("600") or as a
// Go duration ("10m").
type secondsFlag time.Duration

func (s *secondsFlag) String() string { return time.Duration(*s).String() }

func (s *secondsFlag) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		*s = secondsFlag(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not seconds nor a duration: %q", v)
	}
	*s = secondsFlag(d)
	return nil
}

func buildScheme(addToScheme []func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return scheme, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// multiFlag is a repeatable flag whose values may also be comma-separated.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
