//go:build linux

package bench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// Scenario is one workload shape, run against both operators.
type Scenario struct {
	// Name identifies the scenario in reports and namespaces.
	Name string
	// Handlers is how many handlers per cause the operators run (create,
	// update and delete each).
	Handlers int
	// Kind is the Name of the kind the workload runs on (see package
	// internal/scenario): "" or "kopfexample", "widget" or "pod".
	Kind string `json:"kind,omitempty"`
	// Objects is how many objects each phase handles; 0 takes
	// Options.Objects.
	Objects int `json:"objects,omitempty"`
	// Rounds is how many times each operator runs the scenario; 0 takes
	// Options.Rounds.
	Rounds int `json:"rounds,omitempty"`
	// Restart adds the restart phase after idle: the operator is stopped
	// and started again with every object already handled.
	Restart bool `json:"restart,omitempty"`
	// AdmissionFinalizers runs the gopf operator with its finalizer
	// webhook (--webhook-finalizers=always): gopf's webhook server adds
	// gopf's finalizer to each new object as the API server admits its
	// create, so that the create costs the operator one write instead of
	// two. The baselines add their finalizer with a write, as always.
	AdmissionFinalizers bool `json:"admissionFinalizers,omitempty"`
	// Workload is what the load generator does: "" for the phases above
	// (create, idle, restart, update, delete), WorkloadPeriodic or
	// WorkloadFairness.
	Workload string `json:"workload,omitempty"`
	// Operators names the operators that run the scenario, from
	// Operators; empty for all of them.
	Operators []string `json:"operators,omitempty"`
	// Interval is the interval of the periodic work (WorkloadPeriodic).
	Interval time.Duration `json:"interval,omitempty"`
	// Ticking is how long each ticking phase lasts (WorkloadPeriodic).
	Ticking time.Duration `json:"ticking,omitempty"`
	// RetryDelay is how long a failing create handler asks to wait
	// before its next attempt (WorkloadFairness).
	RetryDelay time.Duration `json:"retryDelay,omitempty"`
}

// The workloads other than the one of changes (create, update, delete).
const (
	// WorkloadPeriodic creates the objects, then starts the operator and
	// leaves them to periodic work: phases create, timer-start, timer,
	// daemon-start, daemon and delete (see runPeriodic).
	WorkloadPeriodic = "periodic"
	// WorkloadFairness measures how soon new objects are handled while
	// others keep failing: phases arrive, fail, retry, arrive-retrying and
	// delete (see runFairness).
	WorkloadFairness = "fairness"
)

// The scenarios the benchmark knows.
var (
	// Basic is Kopf's example: one create, one update, one delete handler.
	Basic = Scenario{Name: "basic", Handlers: 1}
	// Webhook is the basic scenario with gopf adding its finalizer at
	// admission (AdmissionFinalizers), against baselines that add theirs
	// with a write.
	Webhook = Scenario{Name: "webhook", Handlers: 1, AdmissionFinalizers: true}
	// ManyHandlers has five handlers per cause, to show that writes do not
	// grow with the number of handlers.
	ManyHandlers = Scenario{Name: "many-handlers", Handlers: 5}
	// Scale is the basic scenario at the size of a real cluster, 5,000
	// objects, with the restart phase, in two rounds in opposite orders
	// (see roundOrder): in one round the operator that runs last does so
	// on a busier control plane, and it was always gopf. Two rounds of
	// 5,000 take as long as one of 10,000 did; -scale-n and -scale-rounds
	// run other sizes.
	Scale = Scenario{Name: "scale", Handlers: 1, Objects: 5000, Rounds: 2, Restart: true}
	// TypedStatus is the basic scenario with the restart phase on Widget:
	// a custom resource of kubebuilder's shape, whose typed status the API
	// server prunes of every field it does not declare, so that no operator
	// can keep its state there. It runs as many rounds as basic
	// (Options.Rounds), as does BuiltIn: their per-phase targets are judged
	// like basic's, and one round of either is too noisy for that: one
	// round of built-in put the update's cluster CPU at 1.86× the tuned
	// baseline's for gopf and at 1.75× for the typed baseline, whose
	// requests are the tuned one's; six more runs put gopf's at 1.01–1.38×.
	TypedStatus = Scenario{Name: "typed-status", Kind: scenario.Widget.Name, Handlers: 1, Restart: true}
	// BuiltIn is the same on Pods: a built-in kind with a status
	// subresource and a typed status. Pods rather than Namespaces, which
	// cannot be deleted without kube-controller-manager, or ConfigMaps,
	// which have no status subresource.
	BuiltIn = Scenario{Name: "built-in", Kind: scenario.Pod.Name, Handlers: 1, Restart: true}
	// Periodic is 10,000 objects with a 10 s timer whose result does not
	// change, then with a daemon that checks every 10 s, each ticking for
	// 60 s, against a reconciler that requeues itself with RequeueAfter
	// 10 s. One round, against the typed baseline only: on unstructured
	// objects the requeueing is the same.
	Periodic = Scenario{Name: "periodic", Workload: WorkloadPeriodic, Objects: 10000, Rounds: 1,
		Operators: []string{Baseline.Name, Gopf.Name}, Interval: 10 * time.Second, Ticking: time.Minute}
	// Fairness is 1,000 new objects arriving (Options.Objects, at
	// arrivalRate) alone, then while as many others fail their create
	// handler with a temporary error and a 5 s delay, every time. One
	// round, against the typed baseline only.
	Fairness = Scenario{Name: "fairness", Workload: WorkloadFairness, Handlers: 1, Rounds: 1,
		Operators: []string{Baseline.Name, Gopf.Name}, RetryDelay: 5 * time.Second}
)

// operators returns the operators that run sc, in the order of Operators.
func (sc Scenario) operators() []Operator {
	if len(sc.Operators) == 0 {
		return Operators
	}
	var out []Operator
	for _, op := range Operators {
		if slices.Contains(sc.Operators, op.Name) {
			out = append(out, op)
		}
	}
	return out
}

// operators returns the operators that run sc under o: sc's, less those
// o.Operators leaves out.
func (o Options) operators(sc Scenario) []Operator {
	ops := slices.Clone(sc.operators()) // not Operators itself
	if len(o.Operators) == 0 {
		return ops
	}
	return slices.DeleteFunc(ops, func(op Operator) bool { return !slices.Contains(o.Operators, op.Name) })
}

// checkOperators returns an error if names names an unknown operator.
func checkOperators(names []string) error {
	for _, name := range names {
		if !slices.ContainsFunc(Operators, func(op Operator) bool { return op.Name == name }) {
			return fmt.Errorf("unknown operator %q: want baseline-tuned, baseline, baseline-unstructured or gopf", name)
		}
	}
	return nil
}

// kind returns the kind the scenario runs on.
func (sc Scenario) kind() (scenario.Kind, error) {
	if sc.Kind == "" {
		return scenario.KopfExample, nil
	}
	for _, k := range scenario.Kinds {
		if k.Name == sc.Kind {
			return k, nil
		}
	}
	return scenario.Kind{}, fmt.Errorf("scenario %s: unknown kind %q: want kopfexample, widget or pod", sc.Name, sc.Kind)
}

// Options configure a benchmark run. Zero values take the defaults named.
type Options struct {
	// Objects is how many objects each phase handles in scenarios that do
	// not say. Default: 1000.
	Objects int
	// Idle is how long the objects are left alone between the create and
	// the update phase. Default: 5 s.
	Idle time.Duration
	// Scenarios run in this order. Default: Basic, Webhook, ManyHandlers,
	// Scale, TypedStatus, BuiltIn, Periodic and Fairness.
	Scenarios []Scenario
	// Rounds is how many times each operator runs a scenario that does not
	// say; the figures compared are the medians. The rounds run the
	// operators in different orders (see roundOrder). Default: 1.
	Rounds int
	// Workers is how many requests the load generator has in flight.
	// Default: 32.
	Workers int
	// MaxConcurrentReconciles is given to both operators. Default: 16.
	MaxConcurrentReconciles int
	// PhaseTimeout bounds the wait for one phase to complete. Default: 10 min.
	PhaseTimeout time.Duration

	// ModuleRoot is the gopf checkout the operators are built from.
	// Default: the module of the working directory.
	ModuleRoot string
	// AssetsDir holds kube-apiserver and etcd. Default: KUBEBUILDER_ASSETS,
	// else the newest bin/k8s/<version>-<os>-<arch> under ModuleRoot.
	AssetsDir string
	// WorkDir receives binaries, kubeconfigs, the audit log and the
	// operators' output. Default: a temporary folder, removed afterwards.
	WorkDir string
	// ProfileDir, if set, receives a CPU profile of every operator run
	// (<scenario>-<operator>-r<round>.cpu.pprof) and a heap profile taken
	// while the objects are idle (.heap.pprof), and kube-apiserver's CPU
	// profile of each phase the workload drives
	// (<scenario>-<operator>-r<round>.apiserver-<phase>.pprof), which shows
	// what each operator's requests cost the API server. Profiling costs
	// the operators and the API server some CPU.
	ProfileDir string

	// Operators, if set, names the only operators that run (from
	// Operators), in every scenario that has them.
	Operators []string
	// CountReconciles has the operators count their finished reconciles
	// by result for the report (PhaseResult.Reconciles), which costs them
	// a reading of their metrics registry every 200 ms.
	CountReconciles bool

	// Sharded, if set, runs the sharded scenario after Scenarios (see
	// Sharded); with no Scenarios given, it runs alone.
	Sharded *Sharded

	// Progress, if set, receives a single updating status line (using \r).
	Progress io.Writer
	// Log, if set, receives a line per step.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.Objects <= 0 {
		o.Objects = 1000
	}
	if o.Idle <= 0 {
		o.Idle = 5 * time.Second
	}
	if len(o.Scenarios) == 0 && o.Sharded == nil {
		o.Scenarios = []Scenario{Basic, Webhook, ManyHandlers, Scale, TypedStatus, BuiltIn, Periodic, Fairness}
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 16
	}
	if o.PhaseTimeout <= 0 {
		o.PhaseTimeout = 10 * time.Minute
	}
	return o
}

// objects is how many objects sc has under o.
func (o Options) objects(sc Scenario) int {
	if sc.Objects > 0 {
		return sc.Objects
	}
	return o.Objects
}

// rounds is how many rounds sc has under o.
func (o Options) rounds(sc Scenario) int {
	if sc.Rounds > 0 {
		return sc.Rounds
	}
	return o.Rounds
}
