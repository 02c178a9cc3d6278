package robustness

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/reconcile"
)

// history builds a history from events given in order, one millisecond
// apart, with one object "obj0" as final says.
type history struct {
	h       History
	tick    time.Time
	timerID int // the last timer run's id
}

func newHistory() *history {
	return &history{h: History{Final: map[string]Final{}, Finalizers: []string{"gopf.dev/finalizer"}, WritesPerCall: 1}, tick: time.Unix(0, 0)}
}

func (b *history) add(e Event) *history {
	b.tick = b.tick.Add(time.Millisecond)
	e.At = b.tick
	if e.Kind != EventStart && e.Kind != EventStop && e.Kind != EventStopping && e.Kind != EventKill && e.Object == "" {
		e.Object = "obj0"
	}
	b.h.Events = append(b.h.Events, e)
	return b
}

func (b *history) start(p int) *history { return b.add(Event{Kind: EventStart, Process: p}) }
func (b *history) stopFirst() *history  { return b.add(Event{Kind: EventStop, Process: 1}) }
func (b *history) kill(p int) *history  { return b.add(Event{Kind: EventKill, Process: p}) }

// landed adds a write of gopf's state about obj0 that landed.
func (b *history) landed() *history {
	return b.add(Event{Kind: EventLanded, Detail: "PATCH kopfexamples/status: 200"})
}
func (b *history) write(v Versions) *history {
	return b.add(Event{Kind: EventWrite, Versions: v})
}
func (b *history) call(p int, handler string, v Versions) *history {
	return b.callAs(p, handler, v, Succeeded)
}

// callAs adds a handler call with an outcome. Its reason is the handler's,
// and for the field handler that of the last create or update call.
func (b *history) callAs(p int, handler string, v Versions, outcome Outcome) *history {
	reason := handler
	if handler == HandlerField {
		reason = HandlerCreate
		for _, e := range b.h.Events {
			if e.Kind == EventCall && (e.Handler == HandlerCreate || e.Handler == HandlerUpdate) {
				reason = e.Handler
			}
		}
	}
	return b.add(Event{Kind: EventCall, Process: p, Handler: handler, Reason: reason, Versions: v, Outcome: outcome})
}

// final sets how obj0 ended, with writes within any budget.
func (b *history) final(f Final) History {
	b.h.Final["obj0"] = f
	b.h.End = b.tick
	return b.h
}

var (
	v1 = Versions{Spec: "s1", Label: "l1", Watched: "w1"}
	v2 = Versions{Spec: "s2", Label: "l1", Watched: "w1"}
)

// rules returns the rules of the violations.
func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

func TestCheckAcceptsAHistoryThatKeepsTheContract(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		stopFirst().write(v2).start(2).
		call(2, HandlerUpdate, v2).call(2, HandlerResume, v2).
		final(Final{Exists: true, Versions: v2, Writes: 4})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("violations in a sound history: %v", v)
	}
}

func TestCheckReportsACreateHandlerRunTwice(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		stopFirst().start(2).
		call(2, HandlerCreate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 3})
	v := Check(h)
	if !strings.Contains(strings.Join(rules(v), ","), RuleCreateOnce) {
		t.Fatalf("want a %q violation, got %v", RuleCreateOnce, v)
	}
	// The restarted process also never resumed the handled object.
	if !strings.Contains(strings.Join(rules(v), ","), RuleResumeOnce) {
		t.Fatalf("want a %q violation, got %v", RuleResumeOnce, v)
	}
}

func TestCheckWantsNoResumeWhileTheCreateIsUnfinished(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).callAs(1, HandlerField, v1, Interrupted).
		stopFirst().start(2).
		call(2, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, Writes: 3})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("violations in a sound history (the create goes on, no resume): %v", v)
	}
}

func TestCheckWantsTheFieldHandlerToSeeAChangeMadeWhileTheCreateRetried(t *testing.T) {
	v3 := Versions{Spec: "s1", Label: "l1", Watched: "w3"}
	h := newHistory().start(1).write(v1).
		callAs(1, HandlerCreate, v1, Retrying).call(1, HandlerField, v1).
		write(v3).call(1, HandlerCreate, v3).
		final(Final{Exists: true, Versions: v3, Writes: 3})
	if v := Check(h); !slices.Contains(rules(v), RuleUpdateLost) {
		t.Fatalf("the field handler finished on w1 only, and the change to w3 was made while the create retried: want an %q violation, got %v", RuleUpdateLost, v)
	}
}

func TestCheckTakesTheLastRunOfARepeatedCreate(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventRefused, Detail: "PATCH kopfexamples/status: 500"}).
		stopFirst().write(v2).start(2).
		call(2, HandlerCreate, v2).call(2, HandlerField, v2).
		final(Final{Exists: true, Versions: v2, Writes: 5})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("the repeated create covers v2, no update is owed: %v", v)
	}
}

func TestCheckExcusesARepeatAfterARefusedWrite(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventRefused, Detail: "PATCH kopfexamples/status: 500"}).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, Writes: 3})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("a repeat after a refused write is at least once, as Kopf has it; got %v", v)
	}
}

func TestCheckExcusesNoRepeatAfterALostResponse(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventLost, Detail: "PATCH kopfexamples/status: 200, response lost"}).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, Writes: 5})
	got := rules(Check(h))
	if strings.Join(got, ",") != RuleCreateOnce+","+RuleUpdateSpurious {
		t.Fatalf("a write whose response was lost landed: want %q and %q violations, got %v", RuleCreateOnce, RuleUpdateSpurious, Check(h))
	}
	// Its retry is within the budget.
	h = newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventLost, Detail: "PATCH kopfexamples/status: 200, response lost"}).
		final(Final{Exists: true, Versions: v1, Writes: 5})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("one more write for a lost response is within the budget; got %v", v)
	}
}

func TestCheckExcusesARepeatOfACallAKillCutBeforeItsOutcomeLanded(t *testing.T) {
	// The create finished, and the process was killed before the write of
	// its outcome: the next process runs it again.
	afterReturn := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		kill(1).start(2).
		call(2, HandlerCreate, v1).call(2, HandlerField, v1).landed().
		final(Final{Exists: true, Versions: v1, Writes: 4})
	// The delete handler was killed while it ran.
	inHandler := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).landed().
		add(Event{Kind: EventDelete}).
		callAs(1, HandlerDelete, v1, Killed).
		kill(1).start(2).
		call(2, HandlerDelete, v1).landed().
		final(Final{Writes: 4})
	for name, h := range map[string]History{"after return": afterReturn, "in handler": inHandler} {
		if v := Check(h); len(v) > 0 {
			t.Errorf("%s: a call cut by a kill may run again; got %v", name, v)
		}
	}
	if cut, repeated := Cuts(afterReturn); cut != 2 || repeated != 2 {
		t.Errorf("after return: want the create and field calls cut and repeated, got %d cut, %d repeated", cut, repeated)
	}
	if cut, repeated := Cuts(inHandler); cut != 1 || repeated != 1 {
		t.Errorf("in handler: want the delete call cut and repeated, got %d cut, %d repeated", cut, repeated)
	}
}

func TestCheckHoldsACallWhoseOutcomeLandedBeforeTheKillToOnce(t *testing.T) {
	landed := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).landed().
		kill(1).start(2).
		call(2, HandlerCreate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 4})
	lost := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventLost, Detail: "PATCH kopfexamples/status: 200, response lost"}).
		kill(1).start(2).
		call(2, HandlerCreate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 4})
	// Process 1 stopped gracefully: the kill of process 2 cuts nothing of
	// process 1's.
	otherProcess := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		stopFirst().start(2).kill(2).start(3).
		call(3, HandlerCreate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 4})
	for name, h := range map[string]History{"landed": landed, "response lost": lost, "another process killed": otherProcess} {
		if got := rules(Check(h)); !slices.Contains(got, RuleCreateOnce) {
			t.Errorf("%s: want a %q violation, got %v", name, RuleCreateOnce, Check(h))
		}
		if cut, repeated := Cuts(h); cut != 0 || repeated != 0 {
			t.Errorf("%s: want no call cut, got %d cut, %d repeated", name, cut, repeated)
		}
	}
}

func TestCheckExcusesOnlyTheRunAKillCut(t *testing.T) {
	// The create ran again after a kill cut it, and its second outcome
	// landed: a third run is a repeat.
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		kill(1).start(2).
		call(2, HandlerCreate, v1).call(2, HandlerField, v1).landed().
		kill(2).start(3).
		call(3, HandlerCreate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 5})
	if got := rules(Check(h)); !slices.Contains(got, RuleCreateOnce) {
		t.Fatalf("want a %q violation for the third run, got %v", RuleCreateOnce, Check(h))
	}
	// The same with delete handlers.
	h = newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).landed().
		add(Event{Kind: EventDelete}).
		call(1, HandlerDelete, v1).kill(1).start(2).
		call(2, HandlerDelete, v1).landed().kill(2).start(3).
		call(3, HandlerDelete, v1).
		final(Final{Writes: 5})
	if got := rules(Check(h)); !slices.Contains(got, RuleDeleteOnce) {
		t.Fatalf("want a %q violation for the third run, got %v", RuleDeleteOnce, Check(h))
	}
}

func TestCheckWantsNoResumeBeforeTheFieldHandlerRanForTheCreate(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).
		stopFirst().start(2).
		call(2, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, Writes: 3})
	if v := Check(h); len(v) > 0 {
		t.Fatalf("violations in a sound history (the create goes on with the field handler, no resume): %v", v)
	}
}

func TestCheckReportsAnUpdateLost(t *testing.T) {
	// The spec changed while no operator ran; the new process ran the
	// create handler on the new spec and no update handler.
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		stopFirst().write(v2).start(2).
		call(2, HandlerCreate, v2).
		final(Final{Exists: true, Versions: v2, Writes: 3})
	v := Check(h)
	if !strings.Contains(strings.Join(rules(v), ","), RuleUpdateLost) {
		t.Fatalf("want a %q violation, got %v", RuleUpdateLost, v)
	}
}

func TestCheckReportsAnUpdateForAHandlersOwnPatch(t *testing.T) {
	h := newHistory().start(1).write(v1).
		add(Event{Kind: EventCall, Process: 1, Handler: HandlerCreate, Versions: v1, Outcome: Succeeded, Patched: true}).
		call(1, HandlerField, v1).
		add(Event{Kind: EventRefused, Detail: "PATCH kopfexamples: 409"}).
		call(1, HandlerUpdate, v1).
		final(Final{Exists: true, Versions: v1, Writes: 4})
	v := Check(h)
	if got := strings.Join(rules(v), ","); got != RuleUpdateSpurious {
		t.Fatalf("want one %q violation, got %v", RuleUpdateSpurious, v)
	}
}

func TestCheckReportsAStuckFinalizer(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventDelete}).
		call(1, HandlerDelete, v1).
		final(Final{Exists: true, Versions: v1, Finalizers: []string{"gopf.dev/finalizer"}, Writes: 3})
	v := Check(h)
	if got := strings.Join(rules(v), ","); got != RuleFinalizer {
		t.Fatalf("want one %q violation, got %v", RuleFinalizer, v)
	}
	// A namespace stays terminating: only gopf's finalizer counts.
	h.Terminating = true
	h.Final["obj0"] = Final{Exists: true, Versions: v1, Finalizers: []string{"kubernetes"}, Writes: 3}
	if v := Check(h); len(v) > 0 {
		t.Fatalf("a terminating object without gopf's finalizer: want no violation, got %v", v)
	}
}

func TestCheckReportsADeleteHandlerRunTwiceOrNever(t *testing.T) {
	twice := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventDelete}).
		call(1, HandlerDelete, v1).call(1, HandlerDelete, v1).
		final(Final{Writes: 4})
	never := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(Event{Kind: EventDelete}).
		final(Final{Writes: 3})
	for name, h := range map[string]History{"twice": twice, "never": never} {
		if got := strings.Join(rules(Check(h)), ","); got != RuleDeleteOnce {
			t.Errorf("%s: want one %q violation, got %v", name, RuleDeleteOnce, Check(h))
		}
	}
}

func TestCheckReportsWritesOverTheBudget(t *testing.T) {
	h := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, Writes: 5})
	if got := strings.Join(rules(Check(h)), ","); got != RuleWrites {
		t.Fatalf("want one %q violation, got %v", RuleWrites, Check(h))
	}
}

func TestCheckReportsAnotherWritersFinalizerRemoved(t *testing.T) {
	h := newHistory().start(1).write(v1).
		add(Event{Kind: EventConflict}).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		final(Final{Exists: true, Versions: v1, ForeignFinalizer: true, Finalizers: []string{"gopf.dev/finalizer"}, Writes: 3})
	if got := strings.Join(rules(Check(h)), ","); got != RuleForeign {
		t.Fatalf("want one %q violation, got %v", RuleForeign, Check(h))
	}
}

func TestGenerateGivesTheSameSequenceForTheSameSeed(t *testing.T) {
	a, b := Generate(42).String(), Generate(42).String()
	if a != b {
		t.Fatalf("seed 42 gave two sequences:\n%s\n---\n%s", a, b)
	}
	if a == Generate(43).String() {
		t.Fatalf("seeds 42 and 43 gave the same sequence")
	}
	for seed := uint64(0); seed < 200; seed++ {
		s := Generate(seed)
		if last := s[len(s)-1].Kind; last == OpStop || last == OpFaults || last == OpRestartAfterLost || last == OpArm {
			t.Fatalf("seed %d ends with %s: a run could not settle", seed, last)
		}
	}
}

func TestGenerateKillsInSomeSequencesAndKillsWhereItArms(t *testing.T) {
	killing, afterLost, inDaemon, inTimer := 0, 0, 0, 0
	for seed := uint64(0); seed < 200; seed++ {
		s := Generate(seed)
		if s.Kills() {
			killing++
		}
		if slices.ContainsFunc(s, func(op Op) bool { return op.Kind == OpKill && op.Moment == MomentAfterLostResponse }) {
			afterLost++
		}
		for i, op := range s {
			if op.Kind == OpArm && (op.Handler == HandlerDaemon || op.Handler == HandlerTimer) {
				// A daemon or a timer needs no trigger: its next iteration
				// or run kills.
				want := map[string]Moment{HandlerDaemon: MomentInDaemon, HandlerTimer: MomentInTimer}[op.Handler]
				if op.Behaviour != BehaveKill || i+1 >= len(s) || s[i+1].Kind != OpKill || s[i+1].Moment != want {
					t.Fatalf("seed %d: the kill armed on a %s at operation %d is not carried out next:\n%s", seed, op.Handler, i, s)
				}
				if op.Handler == HandlerDaemon {
					inDaemon++
				} else {
					inTimer++
				}
				continue
			}
			if op.Kind == OpArm && op.Behaviour == BehaveKill && (i+2 >= len(s) || s[i+2].Kind != OpKill || s[i+2].Moment != op.Moment) {
				t.Fatalf("seed %d: the kill armed at operation %d is not carried out after its trigger:\n%s", seed, i, s)
			}
		}
	}
	if killing < 60 || killing > 140 {
		t.Fatalf("%d of 200 sequences kill the operator, want about half", killing)
	}
	if afterLost < 3 {
		t.Fatalf("%d of 200 sequences kill the operator right after a lost response, want a few", afterLost)
	}
	if inDaemon < 10 || inTimer < 10 {
		t.Fatalf("%d kills during a daemon and %d during a timer run in 200 sequences, want a few of each", inDaemon, inTimer)
	}
}

// The status patch of results, where the state goes to annotations after
// it, carries no state: a kill after its response was lost, before the
// state landed, cuts the call; without a kill, a repeat is a violation.
func TestCheckTakesALostResultsPatchAsLandedResultsButNotState(t *testing.T) {
	lostResults := Event{Kind: EventLostResults, Detail: "PATCH kopfexamples/status: 200, response lost"}
	killed := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(lostResults).
		kill(1).start(2).
		call(2, HandlerCreate, v1).call(2, HandlerField, v1).landed().
		final(Final{Exists: true, Versions: v1, Writes: 4})
	if v := Check(killed); len(v) > 0 {
		t.Errorf("a kill before the state landed cuts the call: got %v", v)
	}
	if cut, repeated := Cuts(killed); cut != 2 || repeated != 2 {
		t.Errorf("want the create and field calls cut and repeated, got %d cut, %d repeated", cut, repeated)
	}
	restarted := newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).
		add(lostResults).
		stopFirst().start(2).
		call(2, HandlerCreate, v1).call(2, HandlerField, v1).landed().
		final(Final{Exists: true, Versions: v1, Writes: 4})
	if got := rules(Check(restarted)); !slices.Contains(got, RuleCreateOnce) {
		t.Errorf("a graceful stop after a lost results answer excuses no repeat: want a %q violation, got %v", RuleCreateOnce, Check(restarted))
	}
}

// Which of the operator's writes the checker takes for the write of the
// state decides which repeats a kill excuses: where the state is in status,
// the handlers' own object patch goes first and carries none.
func TestOnlyTheWriteOfTheStateCarriesTheState(t *testing.T) {
	withStatus := Class{Status: true}
	typedStatus := Class{Status: true, Skip: map[reconcile.Storage]string{reconcile.StorageStatus: "drops status.gopf"}}
	withoutStatus := Class{}
	for _, tc := range []struct {
		name     string
		class    Class
		storage  reconcile.Storage
		toStatus bool
		want     bool
	}{
		{"state in status: the status patch", withStatus, reconcile.StorageStatus, true, true},
		{"state in status: an object patch", withStatus, reconcile.StorageStatus, false, false},
		{"state in status by default: the status patch", withStatus, reconcile.StorageAuto, true, true},
		{"state in status by default: an object patch", withStatus, reconcile.StorageAuto, false, false},
		{"state in annotations by default (a typed status): the object patch", typedStatus, reconcile.StorageAuto, false, true},
		{"state in annotations: the status patch of results", withStatus, reconcile.StorageAnnotations, true, false},
		{"state in annotations: the object patch", withStatus, reconcile.StorageAnnotations, false, true},
		{"Kopf's storage: the object patch", withStatus, reconcile.StorageKopf, false, true},
		{"no status subresource: the object patch", withoutStatus, reconcile.StorageAnnotations, false, true},
	} {
		if got := tc.class.carriesState(tc.storage, tc.toStatus); got != tc.want {
			t.Errorf("%s: carries the state %v, want %v", tc.name, got, tc.want)
		}
	}
}
