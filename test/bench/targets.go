//go:build linux

package bench

// Target is a limit on the ratio gopf/baseline of one figure.
type Target struct {
	// Phase is the phase the figure belongs to, or PhaseTotal.
	Phase string `json:"phase"`
	// Metric names the figure.
	Metric string `json:"metric"`
	// MaxRatio is the highest gopf/baseline ratio that passes.
	MaxRatio float64 `json:"maxRatio"`
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
	MetricPeakRSS         = "peak RSS (MiB)"
)

// Targets are what gopf must reach against each baseline in the same run:
// no more writes per object in any phase (and none when idle or after a
// restart), no more handler calls after a restart (none: every object was
// handled before it), at most 5% more time to get through each phase, at most 5% more
// CPU time over the whole process, and a lower peak memory: at most the
// typed baseline's, at most 90% of the unstructured baseline's (whose cache
// holds maps, not Go structs). Targets of a phase that a scenario does not
// have are not checked.
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
	{Phase: PhaseTotal, Metric: MetricPeakRSS, MaxRatio: 1.0, Against: Baseline.Name, value: peakRSSMiB},
	{Phase: PhaseTotal, Metric: MetricPeakRSS, MaxRatio: 0.9, Against: BaselineUnstructured.Name, value: peakRSSMiB},
}

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
	// a gopf figure of 0 passes.
	Pass bool `json:"pass"`
}

// evaluate compares gopf against the named baseline on every target for
// it.
func evaluate(against string, baseline, gopf *RunResult) []TargetResult {
	out := make([]TargetResult, 0, len(Targets))
	for _, t := range Targets {
		if t.Against != "" && t.Against != against || t.Phase != PhaseTotal && baseline.Phase(t.Phase) == nil {
			continue
		}
		tr := TargetResult{Target: t, Operator: against, Baseline: t.value(baseline), Gopf: t.value(gopf)}
		if tr.Baseline != 0 {
			ratio := tr.Gopf / tr.Baseline
			tr.Ratio = &ratio
			tr.Pass = ratio <= t.MaxRatio+1e-9
		} else {
			tr.Pass = tr.Gopf == 0
		}
		out = append(out, tr)
	}
	return out
}
