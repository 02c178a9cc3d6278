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
// on every kind. Timings are not checked.
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	res, err := Run(ctx, Options{
		Objects:      20,
		Idle:         2 * time.Second,
		Workers:      8,
		PhaseTimeout: time.Minute,
		Scenarios:    []Scenario{Basic, ManyHandlers, {Name: "scale", Handlers: 1, Objects: 30, Rounds: 1, Restart: true}, TypedStatus, BuiltIn},
		ModuleRoot:   root,
		Log:          testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}

	if len(res.Scenarios) != 5 {
		t.Fatalf("got %d scenarios, want basic, many-handlers, scale, typed-status and built-in", len(res.Scenarios))
	}
	for _, s := range res.Scenarios {
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
	for _, s := range res.Scenarios[2:] {
		if r := s.Median(Gopf.Name).Phase(PhaseRestart); r == nil || r.Seconds <= 0 {
			t.Errorf("the %s scenario has no restart phase with a time: %+v", s.Scenario.Name, r)
		}
	}

	// The reports render.
	dir := t.TempDir()
	if err := res.WriteJSON(filepath.Join(dir, "results.json")); err != nil {
		t.Error(err)
	}
	md := res.Markdown()
	for _, row := range []string{"| basic | create | writes/object | baseline-unstructured |", "| typed-status | restart | handler calls | baseline |", "| built-in | restart | writes | baseline-unstructured |"} {
		if !strings.Contains(md, row) {
			t.Errorf("the Markdown report has no row %q:\n%s", row, md)
		}
	}
	var text strings.Builder
	res.WriteText(&text)
	t.Log("\n" + text.String())
}

// testWriter sends the benchmark's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
