package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/plan"
	"github.com/gopf-dev/gopf/reconcile"
)

// statusFlags are the flags of the status and plan commands.
type statusFlags struct {
	namespace     string
	allNamespaces bool
	output        string
	chunkSize     int64
	peeringName   string
	peeringNS     string
	shardRing     string
}

// newStatusFlags defines the flags of a status-like command; kubectl's
// names where kubectl has them.
func newStatusFlags(fs *flag.FlagSet) *statusFlags {
	f := &statusFlags{}
	fs.StringVar(&f.namespace, "namespace", "", "Only objects in this namespace. Default: all namespaces the operator handles.")
	fs.StringVar(&f.namespace, "n", "", "Short for --namespace.")
	fs.BoolVar(&f.allNamespaces, "all-namespaces", false, "All namespaces (the default).")
	fs.BoolVar(&f.allNamespaces, "A", false, "Short for --all-namespaces.")
	fs.StringVar(&f.output, "output", "table", "Output format: table (a line per object), json or yaml (every detail, in a stable form).")
	fs.StringVar(&f.output, "o", "table", "Short for --output.")
	fs.Int64Var(&f.chunkSize, "chunk-size", 500, "How many objects to list per request; output streams page by page.")
	fs.StringVar(&f.peeringName, "peering", "", "The peering whose entries tell which operator runs timers and daemons. Default: the operator's.")
	fs.StringVar(&f.peeringNS, "peering-namespace", "", "The namespace of a KopfPeering; default: a ClusterKopfPeering.")
	fs.StringVar(&f.shardRing, "shard-ring", "", "The operator's sharding ring (its --shard-ring): adds a SHARD column, each object's shard from its labels. "+
		"Default: the ring set in the operator's code, if any; the json and yaml forms name the shard of any ring the labels name.")
	return f
}

// options sets the peering and the sharding ring the flags name on opts.
func (f *statusFlags) options(opts reconcile.Options) reconcile.Options {
	if f.peeringName != "" {
		opts.Peering = &reconcile.PeeringOptions{Name: f.peeringName, Namespace: f.peeringNS}
	}
	if f.shardRing != "" {
		opts.Sharding = &reconcile.Sharding{Ring: f.shardRing}
	}
	return opts
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, as kubectl allows, and returns the latter.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// selection checks the namespace flags and the positional [KIND] [NAME].
func (f *statusFlags) selection(positional []string) (plan.Selection, error) {
	sel := plan.Selection{Namespace: f.namespace, PageSize: f.chunkSize}
	if f.allNamespaces && f.namespace != "" {
		return sel, errors.New("give --namespace or --all-namespaces, not both")
	}
	if f.chunkSize <= 0 {
		return sel, fmt.Errorf("--chunk-size must be positive, not %d", f.chunkSize)
	}
	switch len(positional) {
	case 2:
		sel.Name = positional[1]
		fallthrough
	case 1:
		sel.Kind = positional[0]
	case 0:
	default:
		return sel, fmt.Errorf("unexpected arguments %q: give at most a kind and a name", positional[2:])
	}
	return sel, nil
}

// runStatus implements the status and plan commands on the cluster of
// KUBECONFIG (or in-cluster config).
func runStatus(p Program, command string, args []string) error {
	cluster := func() (*rest.Config, error) {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("finding the cluster (set KUBECONFIG or run in a cluster): %w", err)
		}
		return cfg, nil
	}
	return statusCommand(ctrl.SetupSignalHandler(), os.Stdout, os.Stderr, cluster, p, command, args)
}

// planCommand names the dry run of a start, which shares the status
// command's flags and listing.
const planCommand = "plan"

// statusCommand is the status command (or, with command planCommand, the dry
// run of a start): it lists the objects of the operator's kinds and tells
// where each handler stands, or what the operator would do on start. It
// writes nothing to the cluster. cluster is asked for the cluster only
// once the flags are read, so that -h and bad flags need none.
func statusCommand(ctx context.Context, stdout, stderr io.Writer, cluster func() (*rest.Config, error), p Program, command string, args []string) error {
	fs := flag.NewFlagSet(p.Name+" "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		what := "where each handler stands on each object"
		if command == planCommand {
			what = "what the operator would do with each object on start, writing nothing"
		}
		fmt.Fprintf(fs.Output(), "Usage: %s %s [KIND] [NAME] [-n NAMESPACE | -A] [-o table|json|yaml]\n\nShows %s.\n\n", p.Name, command, what)
		fs.PrintDefaults()
	}
	f := newStatusFlags(fs)
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	sel, err := f.selection(positional)
	if err != nil {
		return err
	}
	scheme, err := buildScheme(p.AddToScheme)
	if err != nil {
		return err
	}
	opts := f.options(p.Engine)
	cfg, err := cluster()
	if err != nil {
		return err
	}
	planner, err := plan.NewPlanner(cfg, scheme, p.Registry, engine.OptionsFrom(opts))
	if err != nil {
		return err
	}
	view := plan.ViewStatus
	if command == planCommand {
		view = plan.ViewPlan
	}
	return f.print(ctx, stdout, stderr, planner, sel, view)
}

// print streams the plan to stdout in the chosen form; an empty table
// says so on stderr, as kubectl does.
func (f *statusFlags) print(ctx context.Context, stdout, stderr io.Writer, planner *plan.Planner, sel plan.Selection, view plan.View) error {
	n, err := planner.Print(ctx, stdout, sel, f.output, view)
	if err == nil && n == 0 && f.output == "table" {
		fmt.Fprintln(stderr, "No objects found.")
	}
	return err
}

// RunKubectlPlugin is gopf.RunKubectlPlugin.
func RunKubectlPlugin(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	const usage = "Usage: kubectl gopf status KIND[,KIND...] [NAME] [-n NAMESPACE | -A] [-o table|json|yaml] [--shard-ring RING]\n\n" +
		"Shows what gopf stored on objects of the kinds: the progress of each handler, the last-handled state, finalizers, the shard.\n\n"
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			return flag.ErrHelp
		}
		return fmt.Errorf("unknown command %q (commands: status)", args[0])
	}
	fs := flag.NewFlagSet("kubectl gopf status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	f := newStatusFlags(fs)
	kubeconfig := fs.String("kubeconfig", "", "Path to the kubeconfig file. Default: KUBECONFIG, else ~/.kube/config.")
	kubeContext := fs.String("context", "", "The kubeconfig context to use. Default: the current context.")
	prefix := fs.String("prefix", "gopf.dev", "The operator's annotation prefix (reconcile.Options.Prefix).")
	statusField := fs.String("status-field", "gopf", "The operator's status field (reconcile.Options.StatusField).")
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		fs.Usage()
		return errors.New("give the kind of the objects, such as kopfexamples")
	}
	sel, err := f.selection(positional)
	if err != nil {
		return err
	}
	loader := clientcmd.NewDefaultClientConfigLoadingRules()
	loader.ExplicitPath = *kubeconfig
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, &clientcmd.ConfigOverrides{CurrentContext: *kubeContext})
	cfg, err := kc.ClientConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if sel.Namespace == "" && !f.allNamespaces {
		if sel.Namespace, _, err = kc.Namespace(); err != nil {
			return fmt.Errorf("reading the kubeconfig's namespace: %w", err)
		}
	}
	opts := f.options(reconcile.Options{Prefix: *prefix, StatusField: *statusField})
	kinds := strings.Split(sel.Kind, ",")
	planner, err := plan.NewGenericPlanner(cfg, kinds, engine.OptionsFrom(opts))
	if err != nil {
		return err
	}
	sel.Kind = "" // every kind of the generic planner is one asked for
	return f.print(ctx, stdout, stderr, planner, sel, plan.ViewStatus)
}
