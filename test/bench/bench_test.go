//go:build linux

package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// TestBenchmarkSmoke runs the whole benchmark on a few objects so that it
// cannot rot unnoticed, and checks the counts that do not depend on the
// machine: gopf writes no more per object than the hand-written reconciler;
// every operator runs each handler once per object and cause, and runs no
// handler and writes nothing while the objects are idle or after a restart,
// on every kind; gopf's finalizer webhook saves the create's first write
// and is gone when gopf stops; periodic work runs on every object and
// writes nothing while it ticks; failing objects retry and every new object
// is timed. Timings are not checked.
func TestBenchmarkSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the benchmark smoke test starts a control plane and two operators; skipped with -short")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FindAssets("", root); err != nil {
		t.Skipf("skipping the benchmark smoke test: %v", err)
	}
	crlog.SetLogger(logr.Discard())
	periodic, fairness := Periodic, Fairness
	periodic.Objects, periodic.Interval, periodic.Ticking = 5, 300*time.Millisecond, 1500*time.Millisecond
	fairness.Objects, fairness.RetryDelay = 5, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	res, err := Run(ctx, Options{
		Objects:      20,
		Idle:         2 * time.Second,
		Workers:      8,
		PhaseTimeout: time.Minute,
		Scenarios: []Scenario{Basic, Webhook, ManyHandlers, {Name: "scale", Handlers: 1, Objects: 30, Rounds: 1, Restart: true}, TypedStatus,
			BuiltIn, periodic, fairness},
		ModuleRoot: root,
		Log:        testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}

	if len(res.Scenarios) != 8 {
		t.Fatalf("got %d scenarios, want basic, webhook, many-handlers, scale, typed-status, built-in, periodic and fairness", len(res.Scenarios))
	}
	for _, s := range res.Scenarios[:6] {
		gopf := s.Median(Gopf.Name)
		for _, op := range Baselines {
			base := s.Median(op.Name)
			for _, phase := range []string{PhaseCreate, PhaseUpdate, PhaseDelete} {
				b, g := base.Phase(phase), gopf.Phase(phase)
				if b.Writes == 0 {
					t.Errorf("%s/%s: the audit log shows no writes by %s; the counting is broken", s.Scenario.Name, phase, op.Name)
				}
				if g.WritesPerObject > b.WritesPerObject {
					t.Errorf("%s/%s: gopf wrote %.2f times per object, %s %.2f; gopf's requests: %v",
						s.Scenario.Name, phase, g.WritesPerObject, op.Name, b.WritesPerObject, g.Requests)
				}
			}
		}
		for _, op := range Operators {
			for _, r := range s.RunsOf(op.Name) {
				for _, phase := range []string{PhaseIdle, PhaseRestart} {
					if p := r.Phase(phase); p != nil && (p.Writes != 0 || p.HandlerCalls != 0) {
						t.Errorf("%s: %s made %d handler calls and %d writes in the %s phase: %v",
							s.Scenario.Name, op.Name, p.HandlerCalls, p.Writes, phase, p.Requests)
					}
				}
				// Every handler ran once per object and cause.
				want := s.Scenario.Objects * s.Scenario.Handlers
				for _, phase := range []string{PhaseCreate, PhaseUpdate, PhaseDelete} {
					if p := r.Phase(phase); p.HandlerCalls != want {
						t.Errorf("%s: %s made %d handler calls in the %s phase, want %d", s.Scenario.Name, op.Name, p.HandlerCalls, phase, want)
					}
				}
			}
		}
	}
	for _, s := range res.Scenarios[3:6] {
		if r := s.Median(Gopf.Name).Phase(PhaseRestart); r == nil || r.Seconds <= 0 {
			t.Errorf("the %s scenario has no restart phase with a time: %+v", s.Scenario.Name, r)
		}
	}

	checkWebhook(t, &res.Scenarios[1])
	checkPeriodic(t, &res.Scenarios[6])
	checkFairness(t, &res.Scenarios[7])

	// The reports render.
	dir := t.TempDir()
	if err := res.WriteJSON(filepath.Join(dir, "results.json")); err != nil {
		t.Error(err)
	}
	md := res.Markdown()
	for _, row := range []string{"| basic | create | writes/object | baseline-tuned |",
		"| webhook | create | writes/object | baseline-tuned | 2.00 | 1.00 | 0.50× | ≤ 0.50× | pass | baseline 0.50×, baseline-unstructured 0.50× |",
		"| basic | create | cluster CPU per object (ms) | baseline-tuned |",
		"| typed-status | restart | handler calls | baseline-tuned |", "| built-in | restart | writes | baseline-tuned |",
		"| periodic | daemon | lateness p99 (ms) | baseline |", "| fairness | arrive-retrying | first call p99, retrying/alone | baseline |"} {
		if !strings.Contains(md, row) {
			t.Errorf("the Markdown report has no row %q:\n%s", row, md)
		}
	}
	var text strings.Builder
	res.WriteText(&text)
	t.Log("\n" + text.String())
}

// checkWebhook checks that gopf, adding its finalizer at admission, wrote
// once per object in every round's create phase, that it put its webhook
// configuration in place while starting and removed it as it stopped, and
// that the baselines wrote twice.
func checkWebhook(t *testing.T, s *ScenarioResult) {
	t.Helper()
	for _, r := range s.Runs {
		want := 2.0
		if r.Operator == Gopf.Name {
			want = 1
			const key = "mutatingwebhookconfigurations"
			if p := r.Phase(PhaseStartup); p.Requests["create "+key] != 1 {
				t.Errorf("webhook: gopf (round %d) did not create its webhook configuration while starting: %v", r.Round, p.Requests)
			}
			if p := r.Phase(PhaseShutdown); p.Requests["delete "+key] != 1 {
				t.Errorf("webhook: gopf (round %d) did not delete its webhook configuration as it stopped: %v", r.Round, p.Requests)
			}
		}
		if p := r.Phase(PhaseCreate); p.WritesPerObject != want {
			t.Errorf("webhook: %s (round %d) wrote %.2f times per object in the create phase, want %.0f: %v",
				r.Operator, r.Round, p.WritesPerObject, want, p.Requests)
		}
	}
}

// checkPeriodic checks that every object ran its periodic work several
// times in each ticking phase, with its lateness measured, and that nothing
// was written meanwhile.
func checkPeriodic(t *testing.T, s *ScenarioResult) {
	t.Helper()
	if len(s.Runs) != 2 || len(s.Targets) != len(PeriodicTargets) {
		t.Errorf("periodic: %d runs and %d targets, want 2 (baseline and gopf) and %d", len(s.Runs), len(s.Targets), len(PeriodicTargets))
	}
	for _, r := range s.Runs {
		for _, phase := range []string{PhaseTimer, PhaseDaemon} {
			p := r.Phase(phase)
			if p == nil {
				t.Errorf("periodic: %s has no %s phase", r.Operator, phase)
				continue
			}
			if p.HandlerCalls < 2*s.Scenario.Objects || p.Writes != 0 {
				t.Errorf("periodic: %s made %d runs and %d writes in the %s phase, want at least %d runs and no writes: %v",
					r.Operator, p.HandlerCalls, p.Writes, phase, 2*s.Scenario.Objects, p.Requests)
			}
			if p.Lateness == nil || p.Lateness.N < s.Scenario.Objects {
				t.Errorf("periodic: %s's lateness in the %s phase covers %+v runs, want at least one per object", r.Operator, phase, p.Lateness)
			}
		}
	}
}

// checkFairness checks that the failing objects kept retrying and that
// every new object's first handler call was timed.
func checkFairness(t *testing.T, s *ScenarioResult) {
	t.Helper()
	if len(s.Runs) != 2 || len(s.Targets) != len(FairnessTargets) {
		t.Errorf("fairness: %d runs and %d targets, want 2 (baseline and gopf) and %d", len(s.Runs), len(s.Targets), len(FairnessTargets))
	}
	n := s.Scenario.Objects
	for _, r := range s.Runs {
		for _, phase := range []string{PhaseArrive, PhaseArriveRetrying} {
			if p := r.Phase(phase); p == nil || p.FirstCall == nil || p.FirstCall.N != n {
				t.Errorf("fairness: %s's %s phase times the first call of %+v objects, want %d", r.Operator, phase, p, n)
			}
		}
		if p := r.Phase(PhaseRetry); p == nil || p.HandlerCalls < n {
			t.Errorf("fairness: %s's retry phase has %+v, want at least one retry per failing object (%d)", r.Operator, p, n)
		}
		if p := r.Phase(PhaseDelete); p == nil || p.Seconds <= 0 {
			t.Errorf("fairness: %s did not delete the failing objects: %+v", r.Operator, p)
		}
	}
}

// testWriter sends the benchmark's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
