//go:build linux

package bench

import (
	"fmt"
	"io"
	"strings"
)

// Column names the tables share.
const (
	columnPhase    = "phase"
	columnOperator = "operator"
)

// targetColumns and targetAlign describe a table of targets: the figure,
// the baseline it is compared against, both values, their ratio, the
// highest ratio that passes and whether it did.
// The last column shows the same ratio against the other baselines, for
// comparison.
var targetColumns = []string{columnPhase, "metric", "against", "baseline", "gopf", "gopf/baseline", "target", "result", "gopf/other baselines"}

const targetAlign = "lllrrrrll"

// targetTable lists every target of a scenario.
func targetTable(s *ScenarioResult) *table {
	t := &table{header: targetColumns, align: targetAlign}
	for _, tr := range s.Targets {
		t.add(tr.Phase, tr.Metric, tr.Operator, figure(tr.Metric, tr.Baseline), figure(tr.Metric, tr.Gopf),
			ratioString(tr), targetText(tr.Target), passString(tr.Pass), s.otherRatios(tr))
	}
	return t
}

// otherRatios lists gopf's ratio on tr's figure against each baseline
// other than tr's, as "name 1.02×"; "–" for none.
func (s *ScenarioResult) otherRatios(tr TargetResult) string {
	var parts []string
	for _, o := range s.Others {
		if o.Phase == tr.Phase && o.Metric == tr.Metric && o.Operator != tr.Operator {
			parts = append(parts, o.Operator+" "+ratioString(o))
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// reconcileTable lists, per phase and operator, the reconciles counted
// (Options.CountReconciles) and what each cost; nil when none were.
func reconcileTable(s *ScenarioResult) *table {
	t := &table{header: []string{columnPhase, columnOperator, "reconciles", "per object", "requeue-after", "requeue", "errors",
		"CPU per reconcile (µs)", "CPU per object (ms)", "cluster CPU per object (ms)", "reconcile time (ms)", "queue wait (ms)"}, align: "llrrrrrrrrrr"}
	if len(s.Medians) == 0 {
		return nil
	}
	for _, p := range s.Medians[0].Phases {
		for _, r := range s.Medians {
			rp := r.Phase(p.Name)
			if rp == nil || rp.Reconciles == nil || rp.Objects == 0 || rp.Name == PhaseStartup || rp.Name == PhaseShutdown {
				continue
			}
			c := rp.Reconciles
			t.add(rp.Name, r.Operator, fmt.Sprint(c.Total), f2(float64(c.Total)/float64(rp.Objects)), fmt.Sprint(c.RequeueAfter),
				fmt.Sprint(c.Requeue), fmt.Sprint(c.Errors), f1(cpuPerReconcile(rp)), f2(rp.CPUSeconds*1000/float64(rp.Objects)),
				f2(clusterCPUPerObject(rp)), f2(c.meanReconcileMs()), f2(c.meanQueueMs()))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// phaseTable lists, per phase and operator, the time, resources and
// requests.
func phaseTable(s *ScenarioResult) *table {
	t := &table{
		header: []string{columnPhase, columnOperator, "time (s)", "CPU (s)", "API server and etcd CPU (s)", MetricClusterCPU, "RSS (MiB)",
			"handler calls", "writes", "writes/object", "requests (verb resource: count)"},
		align: "llrrrrrrrrl",
	}
	if len(s.Medians) == 0 {
		return t
	}
	for _, p := range s.Medians[0].Phases {
		for _, r := range s.Medians {
			rp := r.Phase(p.Name)
			if rp == nil {
				continue
			}
			secs, cp, perObject := f2(rp.Seconds), f2(rp.ControlPlaneCPUSeconds), "–"
			if rp.Name == PhaseShutdown {
				secs, cp = "–", "–"
			}
			if rp.Objects > 0 && (rp.Name == PhaseCreate || rp.Name == PhaseRestart || rp.Name == PhaseUpdate || rp.Name == PhaseDelete) {
				perObject = f2(clusterCPUPerObject(rp))
			}
			t.add(rp.Name, r.Operator, secs, f2(rp.CPUSeconds), cp, perObject, f1(float64(rp.PeakRSSKiB)/1024),
				fmt.Sprint(rp.HandlerCalls), fmt.Sprint(rp.Writes), f2(rp.WritesPerObject), requestList(rp))
		}
	}
	return t
}

// requestList summarises a phase's requests; failed ones are noted.
func requestList(p *PhaseResult) string {
	keys := p.RequestKeys()
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, p.Requests[k]))
	}
	s := strings.Join(parts, ", ")
	if p.Failed > 0 {
		s += fmt.Sprintf("; %d of them failed", p.Failed) // a failure is counted per phase, not per request kind
	}
	if s == "" {
		return "none"
	}
	return s
}

// WriteText prints the results as the terminal tables.
func (r *Results) WriteText(w io.Writer) {
	fmt.Fprintf(w, "gopf against hand-written controller-runtime reconcilers (tuned, typed and unstructured): idle %g s, %d concurrent reconciles\n",
		r.IdleSeconds, r.MaxConcurrentReconciles)
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		fmt.Fprintf(w, "\nScenario %s (%s; %s)\n\n", s.Scenario.Name, workText(s.Scenario), r.sizeText(s.Scenario))
		fmt.Fprint(w, targetTable(s).text())
		fmt.Fprintln(w)
		fmt.Fprint(w, phaseTable(s).text())
		if t := reconcileTable(s); t != nil {
			fmt.Fprintln(w)
			fmt.Fprint(w, t.text())
		}
		if t := timingTable(s); t != nil {
			fmt.Fprintln(w)
			fmt.Fprint(w, t.text())
		}
	}
	if r.Sharded != nil {
		r.Sharded.writeText(w)
		if len(r.Scenarios) == 0 {
			fmt.Fprintf(w, "Load average before: %s, after: %s.\n", r.LoadBefore, r.LoadAfter)
			return
		}
	}
	pass, total := r.Passed()
	fmt.Fprintf(w, "\n%d of %d targets met. Load average before: %s, after: %s.\n", pass, total, r.LoadBefore, r.LoadAfter)
}

// Passed counts the targets met and all targets.
func (r *Results) Passed() (pass, total int) {
	for _, s := range r.Scenarios {
		for _, t := range s.Targets {
			total++
			if t.Pass {
				pass++
			}
		}
	}
	return pass, total
}

// targetText states a target's limit: a ratio, or gopf's figure itself.
func targetText(t Target) string {
	if t.Max != nil {
		return "≤ " + figure(t.Metric, *t.Max)
	}
	return fmt.Sprintf("≤ %.2f×", t.MaxRatio)
}

// workText says what the operators of a scenario do.
func workText(sc Scenario) string {
	switch sc.Workload {
	case WorkloadPeriodic:
		return fmt.Sprintf("a %s timer, then a daemon checking every %s, against RequeueAfter %s; %s per ticking phase",
			sc.Interval, sc.Interval, sc.Interval, sc.Ticking)
	case WorkloadFairness:
		return fmt.Sprintf("%s, the create handlers failing on some objects with a temporary error and a %s delay",
			handlersText(sc.Handlers), sc.RetryDelay)
	}
	if sc.AdmissionFinalizers {
		return handlersText(sc.Handlers) + "; gopf adds its finalizer at admission, with its webhook (`--webhook-finalizers=always`), " +
			"the baselines with a write"
	}
	return handlersText(sc.Handlers)
}

// timingTable lists the timings of a periodic or fairness scenario per
// operator; nil for other scenarios.
func timingTable(s *ScenarioResult) *table {
	switch s.Scenario.Workload {
	case WorkloadPeriodic:
		t := &table{header: []string{columnPhase, columnOperator, "runs", "runs/s", "CPU per run (µs)", "CPU (ms/s)", "peak RSS (MiB)", "writes",
			"lateness p50 (ms)", "p99 (ms)", "max (ms)"}, align: "llrrrrrrrrr"}
		for _, phase := range []string{PhaseTimer, PhaseDaemon} {
			for _, r := range s.Medians {
				if p := r.Phase(phase); p != nil {
					l := p.Lateness
					if l == nil {
						l = &Percentiles{}
					}
					t.add(phase, r.Operator, fmt.Sprint(p.HandlerCalls), f1(perSecond(float64(p.HandlerCalls), p)), f1(cpuPerRun(p)),
						f1(perSecond(p.CPUSeconds*1000, p)), f1(phasePeakRSSMiB(p)), fmt.Sprint(p.Writes), f2(l.P50), f2(l.P99), f2(l.Max))
				}
			}
		}
		return t
	case WorkloadFairness:
		t := &table{header: []string{columnOperator, "first call p50 (ms), alone", "p99 (ms), alone", "p50 (ms), retrying", "p99 (ms), retrying",
			"p50 retrying/alone", "p99 retrying/alone", "retry: writes/s", "retry: handler calls/s"}, align: "lrrrrrrrr"}
		for _, r := range s.Medians {
			alone, retrying, retry := r.Phase(PhaseArrive), r.Phase(PhaseArriveRetrying), r.Phase(PhaseRetry)
			if alone == nil || retrying == nil || retry == nil || alone.FirstCall == nil || retrying.FirstCall == nil {
				continue
			}
			t.add(r.Operator, f2(alone.FirstCall.P50), f2(alone.FirstCall.P99), f2(retrying.FirstCall.P50), f2(retrying.FirstCall.P99),
				f2(slowdown(func(p *Percentiles) float64 { return p.P50 })(&r)), f2(slowdown(func(p *Percentiles) float64 { return p.P99 })(&r)),
				f1(perSecond(float64(retry.Writes), retry)), f1(perSecond(float64(retry.HandlerCalls), retry)))
		}
		return t
	}
	return nil
}

// perSecond divides v by the length of phase p.
func perSecond(v float64, p *PhaseResult) float64 {
	if p.Seconds <= 0 {
		return 0
	}
	return v / p.Seconds
}

func handlersText(n int) string {
	if n == 1 {
		return "one create, one update and one delete handler"
	}
	return fmt.Sprintf("%d create, %d update and %d delete handlers", n, n, n)
}

// sizeText says how many objects and rounds a scenario had.
func (r *Results) sizeText(sc Scenario) string {
	objects, rounds := sc.Objects, sc.Rounds
	if objects == 0 { // results of a benchmark that did not record them per scenario
		objects = r.Objects
	}
	if rounds == 0 {
		rounds = r.Rounds
	}
	if rounds == 1 {
		return fmt.Sprintf("%d objects, one round", objects)
	}
	return fmt.Sprintf("%d objects, medians of %d rounds", objects, rounds)
}
