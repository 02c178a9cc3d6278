//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

func fakeRun(op string, createWrites, idleWrites int, createSeconds, cpu float64, rssKiB int64) RunResult {
	return RunResult{Operator: op, CPUSeconds: cpu, PeakRSSKiB: rssKiB, Phases: []PhaseResult{
		{Name: PhaseCreate, Writes: createWrites, WritesPerObject: float64(createWrites) / 10, Seconds: createSeconds},
		{Name: PhaseIdle, Writes: idleWrites},
		{Name: PhaseUpdate, Writes: 10, WritesPerObject: 1, Seconds: 1},
		{Name: PhaseDelete, Writes: 10, WritesPerObject: 1, Seconds: 1},
	}}
}

func targetResult(t *testing.T, results []TargetResult, phase, metric string) TargetResult {
	t.Helper()
	for _, r := range results {
		if r.Phase == phase && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no target %s %s", phase, metric)
	return TargetResult{}
}

func TestTargetsPassUpToTheirRatioAndMissBeyond(t *testing.T) {
	base := fakeRun("baseline", 20, 0, 2.0, 1.0, 1000)
	gopf := fakeRun("gopf", 20, 0, 2.1, 1.06, 1000)
	got := evaluate(Targets, Baseline.Name, &base, &gopf)
	if r := targetResult(t, got, PhaseCreate, MetricWritesPerObject); !r.Pass || *r.Ratio != 1 {
		t.Errorf("equal writes: %+v, want pass at 1.0×", r)
	}
	if r := targetResult(t, got, PhaseCreate, MetricSeconds); !r.Pass {
		t.Errorf("1.05× the time: %+v, want pass", r)
	}
	if r := targetResult(t, got, "total", MetricCPUSeconds); r.Pass {
		t.Errorf("1.06× the CPU: %+v, want miss", r)
	}
	if r := targetResult(t, got, "total", MetricPeakRSS); !r.Pass || r.Operator != Baseline.Name {
		t.Errorf("the typed baseline's RSS: %+v, want pass", r)
	}
}

func TestPeakRSSMustBeTenPercentBelowTheUnstructuredBaseline(t *testing.T) {
	base := fakeRun("baseline-unstructured", 20, 0, 2, 1, 1000)
	low, same := fakeRun("gopf", 20, 0, 2, 1, 900), fakeRun("gopf", 20, 0, 2, 1, 1000)
	if r := targetResult(t, evaluate(Targets, BaselineUnstructured.Name, &base, &low), "total", MetricPeakRSS); !r.Pass || r.MaxRatio != 0.9 {
		t.Errorf("0.9× the RSS: %+v, want pass against a limit of 0.9×", r)
	}
	if r := targetResult(t, evaluate(Targets, BaselineUnstructured.Name, &base, &same), "total", MetricPeakRSS); r.Pass {
		t.Errorf("the same RSS: %+v, want miss", r)
	}
}

func TestRestartTargetsApplyOnlyToRunsWithARestart(t *testing.T) {
	base, gopf := fakeRun("baseline", 20, 0, 2, 1, 1000), fakeRun("gopf", 20, 0, 2, 1, 1000)
	for _, r := range evaluate(Targets, Baseline.Name, &base, &gopf) {
		if r.Phase == PhaseRestart {
			t.Errorf("a run without a restart phase is checked on %+v", r)
		}
	}
	withRestart := func(r RunResult, writes int) RunResult {
		r.Phases = append(r.Phases, PhaseResult{Name: PhaseRestart, Writes: writes, Seconds: 1})
		return r
	}
	base, gopf = withRestart(base, 0), withRestart(gopf, 2)
	if r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &gopf), PhaseRestart, MetricWrites); r.Pass {
		t.Errorf("2 writes after a restart: %+v, want miss", r)
	}
}

func TestIdleWritesPassOnlyWhenZeroAgainstAZeroBaseline(t *testing.T) {
	base := fakeRun("baseline", 20, 0, 1, 1, 1000)
	quiet, noisy := fakeRun("gopf", 20, 0, 1, 1, 1000), fakeRun("gopf", 20, 3, 1, 1, 1000)
	if r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &quiet), PhaseIdle, MetricWrites); !r.Pass || r.Ratio != nil {
		t.Errorf("0 against 0: %+v, want pass with no ratio", r)
	}
	if r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &noisy), PhaseIdle, MetricWrites); r.Pass {
		t.Errorf("3 against 0: %+v, want miss", r)
	}
}

func TestMedianRunTakesTheMiddleOfEveryFigure(t *testing.T) {
	runs := []RunResult{
		fakeRun("gopf", 20, 0, 3, 1.0, 900),
		fakeRun("gopf", 24, 0, 1, 3.0, 1100),
		fakeRun("gopf", 22, 2, 2, 2.0, 1000),
	}
	runs[1].Phases[0].Requests = map[string]int{"patch kopfexamples": 4}
	m := medianRun(runs)
	if m.CPUSeconds != 2 || m.PeakRSSKiB != 1000 {
		t.Errorf("median CPU %v and RSS %v, want 2 and 1000", m.CPUSeconds, m.PeakRSSKiB)
	}
	c := m.Phase(PhaseCreate)
	if c.Seconds != 2 || c.Writes != 22 || c.WritesPerObject != 2.2 {
		t.Errorf("median create phase = %+v, want 2 s, 22 writes, 2.2 per object", c)
	}
	if _, ok := c.Requests["patch kopfexamples"]; ok {
		t.Errorf("a request seen in one round of three has a median of 0 and is left out: %v", c.Requests)
	}
	if m.Phase(PhaseIdle).Writes != 0 {
		t.Errorf("median idle writes = %d, want 0", m.Phase(PhaseIdle).Writes)
	}
}

func TestRatioShowsAThirdDecimalWhenTwoWouldHideAMiss(t *testing.T) {
	base, gopf := fakeRun("baseline", 20, 0, 3.52, 1, 1000), fakeRun("gopf", 20, 0, 3.7, 1, 1000)
	r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &gopf), PhaseCreate, MetricSeconds)
	if r.Pass || ratioString(r) != "1.051×" {
		t.Errorf("3.7 s against 3.52 s: pass %v, ratio %s; want a miss shown as 1.051×", r.Pass, ratioString(r))
	}
	base, gopf = fakeRun("baseline", 20, 0, 2, 1, 1000), fakeRun("gopf", 20, 0, 2.1, 1, 1000)
	if r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &gopf), PhaseCreate, MetricSeconds); ratioString(r) != "1.05×" {
		t.Errorf("ratio %s, want 1.05×", ratioString(r))
	}
}

func TestHandlerCallsAfterARestartPassOnlyWhenZeroAgainstAZeroBaseline(t *testing.T) {
	withRestart := func(r RunResult, handlerCalls, writes int) RunResult {
		r.Phases = append(r.Phases, PhaseResult{Name: PhaseRestart, HandlerCalls: handlerCalls, Writes: writes, Seconds: 1})
		return r
	}
	base := withRestart(fakeRun("baseline", 20, 0, 2, 1, 1000), 0, 0)
	quiet := withRestart(fakeRun("gopf", 20, 0, 2, 1, 1000), 0, 0)
	rerun := withRestart(fakeRun("gopf", 20, 0, 2, 1, 1000), 10, 10)
	if r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &quiet), PhaseRestart, MetricHandlerCalls); !r.Pass || r.Ratio != nil {
		t.Errorf("no handler calls after a restart: %+v, want pass with no ratio", r)
	}
	r := targetResult(t, evaluate(Targets, Baseline.Name, &base, &rerun), PhaseRestart, MetricHandlerCalls)
	if r.Pass || r.Gopf != 10 {
		t.Errorf("10 create handlers run again after a restart: %+v, want a miss showing 10", r)
	}
	if figure(r.Metric, r.Gopf) != "10" {
		t.Errorf("handler calls shown as %q, want a count", figure(r.Metric, r.Gopf))
	}
}

func TestHandlerCallsAreCountedInThePhaseTheyFellIn(t *testing.T) {
	start := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	handled := []calls.Call{{At: at(0.5), Cause: "create"}, {At: at(1), Cause: "create"}, {At: at(2.5), Cause: "create"}, {At: at(4), Cause: "update"}}
	var create, restart, last PhaseResult
	create.countCalls(handled, at(0), at(1))
	restart.countCalls(handled, at(1), at(3))
	last.countCalls(handled, at(3), time.Time{})
	if create.HandlerCalls != 1 || restart.HandlerCalls != 2 || last.HandlerCalls != 1 {
		t.Errorf("calls per phase %d, %d, %d; want 1, 2, 1 (a call at a boundary belongs to the phase starting there; the last phase has no end)",
			create.HandlerCalls, restart.HandlerCalls, last.HandlerCalls)
	}
}

func TestMedianRunTakesTheMiddleOfTheHandlerCalls(t *testing.T) {
	runs := []RunResult{fakeRun("gopf", 20, 0, 1, 1, 1000), fakeRun("gopf", 20, 0, 1, 1, 1000), fakeRun("gopf", 20, 0, 1, 1, 1000)}
	for i, n := range []int{30, 10, 20} {
		runs[i].Phases[0].HandlerCalls = n
	}
	m := medianRun(runs)
	if got := m.Phase(PhaseCreate).HandlerCalls; got != 20 {
		t.Errorf("median handler calls = %d, want 20", got)
	}
}

func TestTheRestartScenariosRunOnATypedStatusCRDAndABuiltInKind(t *testing.T) {
	want := map[string]string{TypedStatus.Name: scenario.Widget.Name, BuiltIn.Name: scenario.Pod.Name}
	for _, sc := range (Options{}).withDefaults().Scenarios {
		kind, err := sc.kind()
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[sc.Name]; ok {
			if kind.Name != w || !sc.Restart {
				t.Errorf("scenario %s runs on %s, restart %v; want %s with a restart", sc.Name, kind.Name, sc.Restart, w)
			}
			delete(want, sc.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("the default scenarios lack %v", want)
	}
	if _, err := (Scenario{Name: "x", Kind: "namespace"}).kind(); err == nil {
		t.Error("a scenario on an unknown kind was accepted")
	}
}
