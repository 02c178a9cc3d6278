//go:build linux

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// The phases of a run, in order. Startup lasts from the operator's start
// until it watches KopfExamples; restart (in scenarios that have it) from
// SIGTERM to the operator until a new process has seen every object;
// shutdown from SIGTERM until it exits.
const (
	PhaseStartup  = "startup"
	PhaseCreate   = "create"
	PhaseIdle     = "idle"
	PhaseRestart  = "restart"
	PhaseUpdate   = "update"
	PhaseDelete   = "delete"
	PhaseShutdown = "shutdown"
)

// The phases of WorkloadPeriodic, after create: in each start phase the
// operator is stopped and started again, now running timers (then daemons),
// until every object has had a run in the new process; in each ticking
// phase the objects are left to their periodic work for Scenario.Ticking.
const (
	PhaseTimerStart  = "timer-start"
	PhaseTimer       = "timer"
	PhaseDaemonStart = "daemon-start"
	PhaseDaemon      = "daemon"
)

// The phases of WorkloadFairness. Arrive: new objects arrive at
// arrivalRate, nothing else happens, until each has its create results.
// Fail: as many failing objects are created, until each has had two create
// attempts. Retry: nothing but their retries for two retry delays.
// Arrive-retrying: as arrive, with other new objects, while the failing
// ones retry. Delete follows, for all of them.
const (
	PhaseArrive         = "arrive"
	PhaseFail           = "fail"
	PhaseRetry          = "retry"
	PhaseArriveRetrying = "arrive-retrying"
)

// PhaseTotal is the Phase of a target on a figure of the whole run (CPU,
// peak RSS) rather than of one phase.
const PhaseTotal = "total"

// Results are the figures of one benchmark run.
type Results struct {
	// Date is when the run started.
	Date time.Time `json:"date"`
	// Command is the command line that produced the results.
	Command string `json:"command"`
	// ViaMake says that make ran the command (`make bench`).
	ViaMake bool `json:"viaMake,omitempty"`
	// MakeTarget is the make target that ran it, if make said
	// (GOPF_BENCH_TARGET); "" with ViaMake means bench or bench-sharded.
	MakeTarget string `json:"makeTarget,omitempty"`
	// Machine describes where it ran.
	Machine Machine `json:"machine"`
	// LoadBefore and LoadAfter are the machine's 1, 5 and 15 minute load
	// averages when the benchmark started and ended: other work on the
	// machine shows here, and it skews the timings.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
	// ControlPlane names the kube-apiserver and etcd versions.
	ControlPlane string `json:"controlPlane"`
	// Objects is the number of objects per phase in scenarios that do not
	// set their own (ScenarioResult.Scenario.Objects is the number used).
	Objects int `json:"objects"`
	// IdleSeconds is the length of the idle phase.
	IdleSeconds float64 `json:"idleSeconds"`
	// Rounds is how many times each operator ran a scenario that does not
	// set its own.
	Rounds int `json:"rounds"`
	// Workers is the load generator's concurrency.
	Workers int `json:"workers"`
	// MaxConcurrentReconciles is what both operators were given.
	MaxConcurrentReconciles int `json:"maxConcurrentReconciles"`
	// Scenarios are the results per scenario, in the order they ran.
	Scenarios []ScenarioResult `json:"scenarios"`
	// Sharded holds the sharded scenario's runs, if it ran.
	Sharded *ShardedResult `json:"sharded,omitempty"`
}

// ScenarioResult holds the runs of every operator on one scenario and
// their comparison.
type ScenarioResult struct {
	// Scenario is the workload shape.
	Scenario Scenario `json:"scenario"`
	// Runs are the operators' results in the order they ran, every round.
	Runs []RunResult `json:"runs"`
	// Medians are the median figures over the rounds, in the order of
	// Operators.
	Medians []RunResult `json:"medians"`
	// Targets compare gopf's medians against the verdict's baseline's
	// (the tuned baseline, where it ran; see verdictBaseline).
	Targets []TargetResult `json:"targets"`
	// Others compare them against the other baselines', for the
	// report; they are not part of the verdict.
	Others []TargetResult `json:"others,omitempty"`
}

// Median returns the median figures of the named operator, or nil.
func (s *ScenarioResult) Median(operator string) *RunResult {
	for i := range s.Medians {
		if s.Medians[i].Operator == operator {
			return &s.Medians[i]
		}
	}
	return nil
}

// RunsOf returns the runs of the named operator, in round order.
func (s *ScenarioResult) RunsOf(operator string) []RunResult {
	var out []RunResult
	for _, r := range s.Runs {
		if r.Operator == operator {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Round < out[j].Round })
	return out
}

// RunResult is what one operator did in one scenario.
type RunResult struct {
	// Operator is the Name of an Operator.
	Operator string `json:"operator"`
	// Round counts from 1; 0 marks the medians.
	Round int `json:"round"`
	// User is the API user the operator ran as.
	User string `json:"user,omitempty"`
	// Namespace held the run's objects.
	Namespace string `json:"namespace,omitempty"`
	// Phases are the phases in order, startup to shutdown.
	Phases []PhaseResult `json:"phases"`
	// CPUSeconds is the user plus system CPU time of the whole process.
	CPUSeconds float64 `json:"cpuSeconds"`
	// ControlPlaneCPUSeconds is kube-apiserver's and etcd's CPU time from
	// the operator's start to the end of its last phase before shutdown.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCPUSeconds,omitempty"`
	// PeakRSSKiB is the process's peak resident set size: its VmHWM, read
	// at every phase boundary and every few milliseconds while it shuts
	// down (VmHWM only grows, so the last read is the peak).
	PeakRSSKiB int64 `json:"peakRSSKiB"`
	// RusageMaxRSSKiB is maxrss from the process's rusage, for reference:
	// on Linux it includes the benchmark's own RSS high-water mark at the
	// moment the operator was started (Go starts children with vfork
	// semantics and the kernel folds the parent's peak into the child's
	// maxrss at exec), so it overstates the operator's peak.
	RusageMaxRSSKiB int64 `json:"rusageMaxRSSKiB"`
	// CPUProfile and HeapProfile are the profiles' paths, when taken.
	CPUProfile  string `json:"cpuProfile,omitempty"`
	HeapProfile string `json:"heapProfile,omitempty"`
}

// Phase returns the named phase, or nil.
func (r *RunResult) Phase(name string) *PhaseResult {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// PhaseResult is what an operator did during one phase.
type PhaseResult struct {
	// Name is one of the Phase constants.
	Name string `json:"name"`
	// Seconds is the phase's wall time: for create, update and delete the
	// time from the load generator's first request until the last object
	// showed the result (in WorkloadPeriodic's create, whose objects exist
	// before the operator starts, from when the operator watches them);
	// for idle the configured pause.
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the operator's CPU time during the phase.
	CPUSeconds float64 `json:"cpuSeconds"`
	// ControlPlaneCPUSeconds is kube-apiserver's and etcd's CPU time
	// during the phase: serving the operator, the load generator and the
	// benchmark's own watch, whose requests are the same for every
	// operator. The shutdown phase, which has no end, has none.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCPUSeconds,omitempty"`
	// PeakRSSKiB is the operator's peak RSS at the end of the phase (VmHWM).
	PeakRSSKiB int64 `json:"peakRSSKiB,omitempty"`
	// Requests counts the operator's requests by "verb resource".
	Requests map[string]int `json:"requests"`
	// Writes counts the requests that change something (create, update,
	// patch, delete), successful or not.
	Writes int `json:"writes"`
	// WritesPerObject is Writes divided by the number of objects the
	// phase is about (in WorkloadFairness, those created in it; all of
	// them in delete).
	WritesPerObject float64 `json:"writesPerObject"`
	// Failed counts requests answered with an error status (409 and such).
	Failed int `json:"failed"`
	// HandlerCalls counts the operator's handler calls: gopf's create,
	// update and delete handlers; for a hand-written reconciler, each result
	// it stores and each cleanup it does; in WorkloadPeriodic, the runs of
	// the periodic work (timer runs, daemon checks, reconciles that
	// requeue).
	HandlerCalls int `json:"handlerCalls"`
	// Objects is the number of objects the phase is about (see
	// WritesPerObject).
	Objects int `json:"objects,omitempty"`
	// Reconciles counts the operator's finished reconciles of the phase's
	// kind, by result, when the benchmark counted them
	// (Options.CountReconciles).
	Reconciles *ReconcileCounts `json:"reconciles,omitempty"`
	// Lateness is how late the periodic runs that began in the phase
	// began (timer and daemon phases; see lateness).
	Lateness *Percentiles `json:"lateness,omitempty"`
	// FirstCall is, for the objects created in the phase (arrive and
	// arrive-retrying), the time from the API server's answer to each
	// create request to the first call of a create handler on the object.
	FirstCall *Percentiles `json:"firstCall,omitempty"`
}

// ReconcileCounts count an operator's finished reconciles in a phase, as
// controller_runtime_reconcile_total does (see package reconciles).
type ReconcileCounts struct {
	// Total counts them all.
	Total int `json:"total"`
	// Requeue counts those that asked to be requeued with backoff,
	// RequeueAfter those that asked for a delay (gopf's waits for the cache
	// to show its own write among them), Errors those that failed
	// (conflicts among them).
	Requeue      int `json:"requeue"`
	RequeueAfter int `json:"requeueAfter"`
	Errors       int `json:"errors"`
	// ReconcileSeconds is the wall time of the reconciles, summed;
	// QueueSeconds the time the Dequeued requests waited in the work
	// queue, summed.
	ReconcileSeconds float64 `json:"reconcileSeconds"`
	QueueSeconds     float64 `json:"queueSeconds"`
	Dequeued         int     `json:"dequeued"`
}

// meanReconcileMs is the mean wall time of a reconcile in ms; 0 for none.
func (c *ReconcileCounts) meanReconcileMs() float64 {
	if c.Total <= 0 {
		return 0
	}
	return c.ReconcileSeconds * 1000 / float64(c.Total)
}

// meanQueueMs is the mean wait of a request in the work queue in ms; 0
// for none.
func (c *ReconcileCounts) meanQueueMs() float64 {
	if c.Dequeued <= 0 {
		return 0
	}
	return c.QueueSeconds * 1000 / float64(c.Dequeued)
}

// RequestKeys returns the keys of Requests, sorted.
func (p *PhaseResult) RequestKeys() []string {
	keys := make([]string, 0, len(p.Requests))
	for k := range p.Requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteJSON writes the results as indented JSON to path, creating its
// folder.
func (r *Results) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadJSON reads results written by WriteJSON, so that the reports can be
// rendered again.
func ReadJSON(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &r, nil
}
