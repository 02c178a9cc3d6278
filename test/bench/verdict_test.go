//go:build linux

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
)

// withCluster sets the CPU of the run's create phase: the operator's and
// the control plane's, over 10 objects.
func withCluster(r RunResult, operatorCPU, controlPlaneCPU float64) RunResult {
	r.Phases[0].CPUSeconds, r.Phases[0].ControlPlaneCPUSeconds, r.Phases[0].Objects = operatorCPU, controlPlaneCPU, 10
	return r
}

func TestTheTunedBaselineIsTheVerdictAndTheOthersAreShownBeside(t *testing.T) {
	s := &ScenarioResult{Scenario: Basic, Medians: []RunResult{
		fakeRun(BaselineTuned.Name, 20, 0, 2, 1, 1000), fakeRun(Baseline.Name, 20, 0, 4, 1, 1000), fakeRun(Gopf.Name, 20, 0, 3, 1, 1000),
	}}
	s.compare()
	if len(s.Targets) == 0 {
		t.Fatal("no targets")
	}
	for _, tr := range s.Targets {
		if tr.Operator != BaselineTuned.Name {
			t.Errorf("a target of the verdict against %s: %+v", tr.Operator, tr)
		}
	}
	for _, tr := range s.Others {
		if tr.Operator != Baseline.Name {
			t.Errorf("another comparison against %s: %+v", tr.Operator, tr)
		}
	}
	create := targetResult(t, s.Targets, PhaseCreate, MetricSeconds)
	if create.Pass {
		t.Errorf("3 s against the tuned baseline's 2 s: %+v, want a miss, whatever the typed baseline's 4 s", create)
	}
	if got := s.otherRatios(create); got != "baseline 0.75×" {
		t.Errorf("the other baselines' ratio shown as %q, want %q", got, "baseline 0.75×")
	}
}

func TestWithoutTheTunedBaselineTheFirstBaselineThatRanIsTheVerdict(t *testing.T) {
	s := &ScenarioResult{Scenario: Periodic, Medians: []RunResult{fakeRun(Baseline.Name, 20, 0, 2, 1, 1000), fakeRun(Gopf.Name, 20, 0, 2, 1, 1000)}}
	if got := s.verdictBaseline(); got != Baseline.Name {
		t.Errorf("verdict against %q, want the typed baseline", got)
	}
	alone := &ScenarioResult{Scenario: Basic, Medians: []RunResult{fakeRun(Gopf.Name, 20, 0, 2, 1, 1000)}}
	alone.compare()
	if len(alone.Targets)+len(alone.Others) != 0 {
		t.Errorf("gopf alone has targets: %+v", alone.Targets)
	}
}

func TestClusterCPUPerObjectCountsTheOperatorAndTheControlPlane(t *testing.T) {
	base := withCluster(fakeRun(BaselineTuned.Name, 20, 0, 2, 1, 1000), 1, 9)
	gopf := withCluster(fakeRun(Gopf.Name, 10, 0, 2, 1, 1000), 2, 7)
	if got := clusterCPUPerObject(&gopf.Phases[0]); got != 900 {
		t.Errorf("9 s of CPU over 10 objects: %v ms per object, want 900", got)
	}
	r := targetResult(t, evaluate(Targets, BaselineTuned.Name, &base, &gopf), PhaseCreate, MetricClusterCPU)
	if !r.Pass || *r.Ratio != 0.9 {
		t.Errorf("0.9× the cluster CPU: %+v, want pass", r)
	}
	gopf = withCluster(gopf, 2, 7.5)
	if r := targetResult(t, evaluate(AdmissionTargets, BaselineTuned.Name, &base, &gopf), PhaseCreate, MetricClusterCPU); r.Pass {
		t.Errorf("0.95× with gopf's webhook: %+v, want a miss against 0.9×", r)
	}
	if got := clusterCPUPerObject(&PhaseResult{CPUSeconds: 1}); got != 0 {
		t.Errorf("no objects: %v, want 0", got)
	}
}

func TestReconcilesAreSplitByPhaseOverEveryProcess(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	first := []reconciles.Counts{{At: at(1), Total: 10, RequeueAfter: 2}, {At: at(3), Total: 25, RequeueAfter: 3, Errors: 1}}
	second := []reconciles.Counts{{At: at(5), Total: 7}}
	counts := [][]reconciles.Counts{first, second}
	if got := reconcilesBetween(counts, at(0), at(2)); *got != (ReconcileCounts{Total: 10, RequeueAfter: 2}) {
		t.Errorf("first phase: %+v, want 10 reconciles, 2 requeued after a delay", got)
	}
	if got := reconcilesBetween(counts, at(2), at(4)); *got != (ReconcileCounts{Total: 15, RequeueAfter: 1, Errors: 1}) {
		t.Errorf("second phase: %+v", got)
	}
	if got := reconcilesBetween(counts, at(4), time.Time{}); *got != (ReconcileCounts{Total: 7}) {
		t.Errorf("the open last phase: %+v, want the restarted process's 7", got)
	}
	if reconcilesBetween(nil, at(0), at(1)) != nil {
		t.Error("no counts: want none")
	}
}

func TestTheReconcileTableShowsPerObjectAndPerReconcileCosts(t *testing.T) {
	run := fakeRun(Gopf.Name, 20, 0, 2, 1, 1000)
	run.Phases[0].Objects, run.Phases[0].CPUSeconds = 10, 0.5
	run.Phases[0].Reconciles = &ReconcileCounts{Total: 25, RequeueAfter: 5, ReconcileSeconds: 0.3, QueueSeconds: 0.7, Dequeued: 20}
	s := &ScenarioResult{Medians: []RunResult{run}}
	text := reconcileTable(s).text()
	// per object, µs per reconcile, ms per object, ms per reconcile, ms in the queue
	for _, want := range []string{"2.50", "20000.0", "50.00", "12.00", "35.00"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
	if reconcileTable(&ScenarioResult{Medians: []RunResult{fakeRun(Gopf.Name, 20, 0, 2, 1, 1000)}}) != nil {
		t.Error("a table without counts")
	}
}
