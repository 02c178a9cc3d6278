//go:build linux

package bench

import (
	"fmt"
	"io"
	"strings"
)

// targetColumns and targetAlign describe a table of targets: the figure,
// the baseline it is compared against, both values, their ratio, the
// highest ratio that passes and whether it did.
var targetColumns = []string{"phase", "metric", "against", "baseline", "gopf", "gopf/baseline", "target", "result"}

const targetAlign = "lllrrrrl"

// targetTable lists every target of a scenario.
func targetTable(s *ScenarioResult) *table {
	t := &table{header: targetColumns, align: targetAlign}
	for _, tr := range s.Targets {
		t.add(tr.Phase, tr.Metric, tr.Operator, figure(tr.Metric, tr.Baseline), figure(tr.Metric, tr.Gopf),
			ratioString(tr), fmt.Sprintf("≤ %.2f×", tr.MaxRatio), passString(tr.Pass))
	}
	return t
}

// phaseTable lists, per phase and operator, the time, resources and
// requests.
func phaseTable(s *ScenarioResult) *table {
	t := &table{
		header: []string{"phase", "operator", "time (s)", "CPU (s)", "RSS (MiB)", "handler calls", "writes", "writes/object", "requests (verb resource: count)"},
		align:  "llrrrrrrl",
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
			secs := f2(rp.Seconds)
			if rp.Name == PhaseShutdown {
				secs = "–"
			}
			t.add(rp.Name, r.Operator, secs, f2(rp.CPUSeconds), f1(float64(rp.PeakRSSKiB)/1024),
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
	fmt.Fprintf(w, "gopf against hand-written controller-runtime reconcilers (typed and unstructured): idle %g s, %d concurrent reconciles\n",
		r.IdleSeconds, r.MaxConcurrentReconciles)
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		fmt.Fprintf(w, "\nScenario %s (%s; %s)\n\n", s.Scenario.Name, handlersText(s.Scenario.Handlers), r.sizeText(s.Scenario))
		fmt.Fprint(w, targetTable(s).text("  "))
		fmt.Fprintln(w)
		fmt.Fprint(w, phaseTable(s).text("  "))
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
