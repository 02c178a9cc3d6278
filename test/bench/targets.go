//go:build linux

package bench

import "slices"

// Target is a limit on the ratio gopf/baseline of one figure, or on
// gopf's figure itself.
type Target struct {
	// Phase is the phase the figure belongs to, or PhaseTotal.
	Phase string `json:"phase"`
	// Metric names the figure.
	Metric string `json:"metric"`
	// MaxRatio is the highest gopf/baseline ratio that passes.
	MaxRatio float64 `json:"maxRatio"`
	// Max, if set, makes the target absolute: it is the highest gopf
	// figure that passes, whatever the baseline's (which is shown for
	// comparison), and MaxRatio is not used.
	Max *float64 `json:"max,omitempty"`
	// Against names the baseline operator the target is for; "" for
	// every baseline.
	Against string `json:"against,omitempty"`
	// value extracts the figure from a run.
	value func(*RunResult) float64
}

// Metric names.
const (
	MetricWritesPerObject = "writes/object"
	MetricWrites          = "writes"
	MetricHandlerCalls    = "handler calls"
	MetricSeconds         = "time (s)"
	MetricCPUSeconds      = "CPU (s)"
	MetricControlPlaneCPU = "API server and etcd CPU (s)"
	MetricPeakRSS         = "peak RSS (MiB)"
	MetricClusterCPU      = "cluster CPU per object (ms)"
	MetricCPUPerTick      = "CPU per run (µs)"
	MetricLatenessP99     = "lateness p99 (ms)"
	MetricFirstCallP50    = "first call p50, retrying/alone"
	MetricFirstCallP99    = "first call p99, retrying/alone"
)

// Targets are what gopf must reach against each baseline in the same run:
// no more writes per object in any phase (and none when idle or after a
// restart), no more handler calls after a restart (none: every object was
// handled before it), at most 5% more time to get through each phase, at most 5% more
// CPU time over the whole process, no more CPU of the whole cluster
// (operator, API server and etcd) per object in create, update and delete,
// and a lower peak memory: at most the typed baseline's, at most 90% of
// the unstructured and the tuned baselines' (whose caches hold maps, not
// Go structs). Targets of a phase that a scenario does not have are not
// checked.
var Targets = []Target{
	{Phase: PhaseCreate, Metric: MetricWritesPerObject, MaxRatio: 1.0, value: phaseValue(PhaseCreate, writesPerObject)},
	{Phase: PhaseIdle, Metric: MetricWrites, MaxRatio: 1.0, value: phaseValue(PhaseIdle, writes)},
	{Phase: PhaseRestart, Metric: MetricWrites, MaxRatio: 1.0, value: phaseValue(PhaseRestart, writes)},
	{Phase: PhaseRestart, Metric: MetricHandlerCalls, MaxRatio: 1.0, value: phaseValue(PhaseRestart, handlerCalls)},
	{Phase: PhaseUpdate, Metric: MetricWritesPerObject, MaxRatio: 1.0, value: phaseValue(PhaseUpdate, writesPerObject)},
	{Phase: PhaseDelete, Metric: MetricWritesPerObject, MaxRatio: 1.0, value: phaseValue(PhaseDelete, writesPerObject)},
	{Phase: PhaseCreate, Metric: MetricSeconds, MaxRatio: 1.05, value: phaseValue(PhaseCreate, seconds)},
	{Phase: PhaseRestart, Metric: MetricSeconds, MaxRatio: 1.05, value: phaseValue(PhaseRestart, seconds)},
	{Phase: PhaseUpdate, Metric: MetricSeconds, MaxRatio: 1.05, value: phaseValue(PhaseUpdate, seconds)},
	{Phase: PhaseDelete, Metric: MetricSeconds, MaxRatio: 1.05, value: phaseValue(PhaseDelete, seconds)},
	{Phase: PhaseTotal, Metric: MetricCPUSeconds, MaxRatio: 1.05, value: func(r *RunResult) float64 { return r.CPUSeconds }},
	{Phase: PhaseTotal, Metric: MetricControlPlaneCPU, MaxRatio: 1.05, value: func(r *RunResult) float64 { return r.ControlPlaneCPUSeconds }},
	{Phase: PhaseTotal, Metric: MetricPeakRSS, MaxRatio: 1.0, Against: Baseline.Name, value: peakRSSMiB},
	{Phase: PhaseTotal, Metric: MetricPeakRSS, MaxRatio: 0.9, Against: BaselineUnstructured.Name, value: peakRSSMiB},
	{Phase: PhaseTotal, Metric: MetricPeakRSS, MaxRatio: 0.9, Against: BaselineTuned.Name, value: peakRSSMiB},
	{Phase: PhaseCreate, Metric: MetricClusterCPU, MaxRatio: 1.0, value: phaseValue(PhaseCreate, clusterCPUPerObject)},
	{Phase: PhaseUpdate, Metric: MetricClusterCPU, MaxRatio: 1.0, value: phaseValue(PhaseUpdate, clusterCPUPerObject)},
	{Phase: PhaseDelete, Metric: MetricClusterCPU, MaxRatio: 1.0, value: phaseValue(PhaseDelete, clusterCPUPerObject)},
}

// AdmissionTargets are Targets for a scenario in which gopf adds its
// finalizer at admission (Scenario.AdmissionFinalizers): at most half the
// baseline's writes per object in the create phase (one write against the
// finalizer's and the results'), and at most 90% of its cluster CPU per
// object there (the write saved is work the API server and etcd do not
// do); everything else as in Targets.
var AdmissionTargets = withMaxRatio(withMaxRatio(Targets, PhaseCreate, MetricWritesPerObject, 0.5), PhaseCreate, MetricClusterCPU, 0.9)

// withMaxRatio returns a copy of targets with the MaxRatio of the one for
// metric in phase set to maxRatio.
func withMaxRatio(targets []Target, phase, metric string, maxRatio float64) []Target {
	out := slices.Clone(targets)
	for i := range out {
		if out[i].Phase == phase && out[i].Metric == metric {
			out[i].MaxRatio = maxRatio
		}
	}
	return out
}

// PeriodicTargets are what gopf must reach in WorkloadPeriodic, in the
// timer and in the daemon phase: no more CPU per run of the periodic work
// and no higher peak memory than the reconciler that requeues itself, no
// writes (the result does not change), and runs at most 100 ms late at
// the 99th percentile.
var PeriodicTargets = append(periodicTargets(PhaseTimer), periodicTargets(PhaseDaemon)...)

func periodicTargets(phase string) []Target {
	return []Target{
		{Phase: phase, Metric: MetricCPUPerTick, MaxRatio: 1.0, value: phaseValue(phase, cpuPerRun)},
		{Phase: phase, Metric: MetricPeakRSS, MaxRatio: 1.0, value: phaseValue(phase, phasePeakRSSMiB)},
		{Phase: phase, Metric: MetricWrites, Max: limit(0), value: phaseValue(phase, writes)},
		{Phase: phase, Metric: MetricLatenessP99, Max: limit(100), value: phaseValue(phase, latenessP99)},
	}
}

// FairnessTargets are what gopf must reach in WorkloadFairness: new
// objects reach their first create handler call at most 1.2 times later
// (median and 99th percentile) while other objects keep failing and
// retrying than when nothing else happens. The baselines' figures are
// shown for comparison.
var FairnessTargets = []Target{
	{Phase: PhaseArriveRetrying, Metric: MetricFirstCallP50, Max: limit(1.2), value: slowdown(func(p *Percentiles) float64 { return p.P50 })},
	{Phase: PhaseArriveRetrying, Metric: MetricFirstCallP99, Max: limit(1.2), value: slowdown(func(p *Percentiles) float64 { return p.P99 })},
}

// targets returns the targets of sc's workload.
func (sc Scenario) targets() []Target {
	switch sc.Workload {
	case WorkloadPeriodic:
		return PeriodicTargets
	case WorkloadFairness:
		return FairnessTargets
	}
	if sc.AdmissionFinalizers {
		return AdmissionTargets
	}
	return Targets
}

func limit(v float64) *float64 { return &v }

func peakRSSMiB(r *RunResult) float64 { return float64(r.PeakRSSKiB) / 1024 }

func phaseValue(phase string, f func(*PhaseResult) float64) func(*RunResult) float64 {
	return func(r *RunResult) float64 {
		if p := r.Phase(phase); p != nil {
			return f(p)
		}
		return 0
	}
}

func writesPerObject(p *PhaseResult) float64 { return p.WritesPerObject }
func writes(p *PhaseResult) float64          { return float64(p.Writes) }
func seconds(p *PhaseResult) float64         { return p.Seconds }
func handlerCalls(p *PhaseResult) float64    { return float64(p.HandlerCalls) }
func phasePeakRSSMiB(p *PhaseResult) float64 { return float64(p.PeakRSSKiB) / 1024 }

// clusterCPUPerObject is the CPU time the operator, the API server and
// etcd spent in the phase per object it is about, in ms; 0 when the
// number of objects is unknown.
func clusterCPUPerObject(p *PhaseResult) float64 {
	if p.Objects == 0 {
		return 0
	}
	return (p.CPUSeconds + p.ControlPlaneCPUSeconds) * 1000 / float64(p.Objects)
}

// cpuPerReconcile is the operator's CPU time in the phase per finished
// reconcile, in µs; 0 when they were not counted.
func cpuPerReconcile(p *PhaseResult) float64 {
	if p.Reconciles == nil || p.Reconciles.Total == 0 {
		return 0
	}
	return p.CPUSeconds * 1e6 / float64(p.Reconciles.Total)
}

// cpuPerRun is the phase's CPU time divided by its periodic runs, in µs.
func cpuPerRun(p *PhaseResult) float64 {
	if p.HandlerCalls == 0 {
		return 0
	}
	return p.CPUSeconds * 1e6 / float64(p.HandlerCalls)
}

func latenessP99(p *PhaseResult) float64 {
	if p.Lateness == nil {
		return 0
	}
	return p.Lateness.P99
}

// slowdown returns a figure of a fairness run: a percentile of the first
// call delays while failing objects retry divided by the same with
// nothing else happening; 0 when either is missing.
func slowdown(f func(*Percentiles) float64) func(*RunResult) float64 {
	return func(r *RunResult) float64 {
		alone, retrying := r.Phase(PhaseArrive), r.Phase(PhaseArriveRetrying)
		if alone == nil || retrying == nil || alone.FirstCall == nil || retrying.FirstCall == nil || f(alone.FirstCall) <= 0 {
			return 0
		}
		return f(retrying.FirstCall) / f(alone.FirstCall)
	}
}

// TargetResult is one target evaluated on a scenario.
type TargetResult struct {
	Target
	// Operator is the baseline compared with.
	Operator string `json:"operator"`
	// Baseline and Gopf are the two figures.
	Baseline float64 `json:"baseline"`
	Gopf     float64 `json:"gopf"`
	// Ratio is Gopf/Baseline; nil when the baseline is 0.
	Ratio *float64 `json:"ratio"`
	// Pass says whether gopf reached the target. With a baseline of 0, only
	// a gopf figure of 0 passes a ratio target.
	Pass bool `json:"pass"`
}

// evaluate compares gopf against the named baseline on every target for
// it.
func evaluate(targets []Target, against string, baseline, gopf *RunResult) []TargetResult {
	out := make([]TargetResult, 0, len(targets))
	for _, t := range targets {
		if t.Against != "" && t.Against != against || t.Phase != PhaseTotal && baseline.Phase(t.Phase) == nil {
			continue
		}
		tr := TargetResult{Target: t, Operator: against, Baseline: t.value(baseline), Gopf: t.value(gopf)}
		if tr.Baseline != 0 {
			ratio := tr.Gopf / tr.Baseline
			tr.Ratio = &ratio
		}
		switch {
		case t.Max != nil:
			tr.Pass = tr.Gopf <= *t.Max+1e-9
		case tr.Ratio != nil:
			tr.Pass = *tr.Ratio <= t.MaxRatio+1e-9
		default:
			tr.Pass = tr.Gopf == 0
		}
		out = append(out, tr)
	}
	return out
}
