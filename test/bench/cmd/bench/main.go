//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gopf-dev/gopf/test/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		opts     bench.Options
		scenario string
		jsonPath string
		mdPath   string
	)
	flag.IntVar(&opts.Objects, "n", 1000, "objects per phase (basic, webhook, many-handlers, typed-status, built-in; fairness: per kind of object)")
	scale := bench.Scale
	flag.IntVar(&scale.Objects, "scale-n", scale.Objects, "objects per phase in the scale scenario")
	flag.IntVar(&scale.Rounds, "scale-rounds", scale.Rounds, "rounds of the scale scenario")
	periodic := bench.Periodic
	flag.IntVar(&periodic.Objects, "periodic-n", periodic.Objects, "objects in the periodic scenario")
	flag.DurationVar(&periodic.Ticking, "ticking", periodic.Ticking, "how long each ticking phase of the periodic scenario lasts")
	var sharded bench.Sharded
	flag.IntVar(&sharded.Objects, "sharded-n", 10000, "objects per run in the sharded scenario")
	flag.Func("sharded-runs", "a comma-separated list of the only runs of the sharded scenario that run: r1, r2, r4 (the scaling runs; r1 with any other), latency, churn, rolling, chaos; default all", func(v string) error {
		sharded.Runs = strings.Split(v, ",")
		return nil
	})
	flag.IntVar(&sharded.ChaosReplicas, "sharded-chaos-replicas", 2, "replicas the chaos run of the sharded scenario keeps")
	flag.DurationVar(&sharded.KillEvery, "kill-every", 30*time.Second, "how often the chaos run of the sharded scenario kills a replica")
	flag.DurationVar(&opts.Idle, "idle", 5*time.Second, "how long the objects stay idle between create and update")
	flag.StringVar(&scenario, "scenario", "all", "basic, webhook, many-handlers, scale, typed-status, built-in, periodic, fairness, sharded or all (all but sharded); a comma-separated list runs several")
	flag.IntVar(&opts.Rounds, "rounds", 3, "runs per operator of basic, webhook, many-handlers, typed-status and built-in; the medians are compared")
	flag.IntVar(&opts.Workers, "workers", 32, "requests the load generator has in flight")
	flag.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "given to both operators")
	flag.DurationVar(&opts.PhaseTimeout, "phase-timeout", 10*time.Minute, "longest wait for one phase")
	flag.StringVar(&jsonPath, "json", "bin/bench/results.json", "where the JSON results go; empty for none")
	flag.StringVar(&mdPath, "markdown", "", "where the Markdown report goes (make bench: BENCHMARKS.md); empty for none")
	flag.StringVar(&opts.ProfileDir, "profile-dir", "", "write CPU and heap profiles of every operator run into this folder")
	flag.StringVar(&opts.WorkDir, "workdir", "", "keep binaries, kubeconfigs, the audit log and operator output here (default: a temporary folder)")
	flag.BoolVar(&opts.CountReconciles, "count-reconciles", false, "have the operators count their reconciles by result, for a table of reconciles per object and CPU per reconcile")
	operators := flag.String("operators", "", "a comma-separated list of the only operators that run (baseline-tuned, baseline, baseline-unstructured, gopf); empty for all")
	quiet := flag.Bool("quiet", false, "no progress line on the terminal")
	render := flag.String("render", "", "run nothing: print and write the reports again from this results JSON")
	flag.Parse()
	if *render != "" {
		res, err := bench.ReadJSON(*render)
		if err != nil {
			return err
		}
		return report(res, "", mdPath)
	}

	if *operators != "" {
		opts.Operators = strings.Split(*operators, ",")
	}
	known := []bench.Scenario{bench.Basic, bench.Webhook, bench.ManyHandlers, scale, bench.TypedStatus, bench.BuiltIn, periodic, bench.Fairness}
	if scenario == "all" {
		opts.Scenarios = known
	}
	for _, name := range strings.Split(scenario, ",") {
		i := slices.IndexFunc(known, func(sc bench.Scenario) bool { return sc.Name == name })
		switch {
		case name == "all":
		case name == "sharded":
			opts.Sharded = &sharded
		case i < 0:
			return fmt.Errorf("-scenario %q: want basic, webhook, many-handlers, scale, typed-status, built-in, periodic, fairness, sharded or all, or a comma-separated list", scenario)
		default:
			opts.Scenarios = append(opts.Scenarios, known[i])
		}
	}
	opts.Log = os.Stderr
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && !*quiet {
		opts.Progress = os.Stderr // an updating line makes sense on a terminal only
	}

	// The load generator's informer logs through controller-runtime.
	crlog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, opts)
	if err != nil {
		return err
	}
	res.Command = strings.Join(append([]string{"go run ./test/bench/cmd/bench"}, os.Args[1:]...), " ")
	res.ViaMake = os.Getenv("MAKELEVEL") != ""
	res.MakeTarget = os.Getenv("GOPF_BENCH_TARGET")
	return report(res, jsonPath, mdPath)
}

// report writes the JSON and Markdown files that have a path, then prints
// the results.
func report(res *bench.Results, jsonPath, mdPath string) error {
	if jsonPath != "" {
		if err := res.WriteJSON(jsonPath); err != nil {
			return err
		}
		fmt.Println("JSON:", jsonPath)
	}
	if mdPath != "" {
		if err := res.WriteMarkdown(mdPath); err != nil {
			return err
		}
		fmt.Println("Markdown:", mdPath)
	}
	fmt.Println()
	res.WriteText(os.Stdout)
	return nil
}
