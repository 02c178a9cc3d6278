package sharder

import (
	"reflect"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

var t0 = time.Unix(1_800_000_000, 0)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// life is an object created and updated on shard-1, moved to shard-2 by a
// drain, and deleted there.
func life() []Version {
	return []Version{
		{At: at(0), Shard: "shard-1"},
		{At: at(1), Shard: "shard-1", Finalizers: 1, Created: true},
		{At: at(2), Shard: "shard-1", Finalizers: 1, Created: true, Updated: true},
		{At: at(3), Shard: "shard-1", Draining: true, Finalizers: 1, Created: true, Updated: true},
		{At: at(4), Finalizers: 1, Created: true, Updated: true},
		{At: at(5), Shard: "shard-2", Finalizers: 1, Created: true, Updated: true},
		{At: at(6), Shard: "shard-2", Created: true, Updated: true, Gone: true},
	}
}

// lifeCalls are the calls of life, of an object named "a".
func lifeCalls() []calls.Call {
	return []calls.Call{
		{At: at(1), Cause: "create", Object: "a", Replica: "shard-1"},
		{At: at(2), Cause: "update", Object: "a", Replica: "shard-1"},
		{At: at(6), Cause: "delete", Object: "a", Replica: "shard-2"},
	}
}

func TestJudgeAcceptsOneCallPerCauseOnTheLabelledShard(t *testing.T) {
	v := Judge([]string{"a"}, lifeCalls(), Histories{"a": life()})
	if v.Failed() {
		t.Fatalf("Judge failed a clean life: %s", v.Summary())
	}
	want := map[string]map[string]int{"shard-1": {"create": 1, "update": 1}, "shard-2": {"delete": 1}}
	if !reflect.DeepEqual(v.PerReplica, want) {
		t.Errorf("PerReplica = %v, want %v", v.PerReplica, want)
	}
}

func TestJudgeFindsRepeatsMissingCallsAndCallsOffTheirShard(t *testing.T) {
	cs := lifeCalls()
	cs = append(cs, calls.Call{At: at(5), Cause: "update", Object: "a", Replica: "shard-2"}) // a repeat
	cs[2].Replica = "shard-1"                                                                // a delete off its shard
	cs = append(cs, calls.Call{At: at(1), Cause: "create", Object: "b", Replica: "shard-1"})
	cs = append(cs, calls.Call{At: at(1), Cause: "create", Object: "nobody", Replica: "shard-1"})
	v := Judge([]string{"a", "b"}, cs, Histories{"a": life(), "b": life()})
	if want := []Repeat{{Object: "a", Cause: "update", Replicas: []string{"shard-1", "shard-2"}}}; !reflect.DeepEqual(v.Repeats, want) {
		t.Errorf("Repeats = %v, want %v", v.Repeats, want)
	}
	if want := []Misplaced{{Object: "a", Cause: "delete", Replica: "shard-1", Shard: "shard-2", Seen: true}}; !reflect.DeepEqual(v.Misplaced, want) {
		t.Errorf("Misplaced = %v, want %v", v.Misplaced, want)
	}
	if want := map[string][]string{"update": {"b"}, "delete": {"b"}}; !reflect.DeepEqual(v.Missing, want) {
		t.Errorf("Missing = %v, want %v", v.Missing, want)
	}
	if v.Stray != 1 || !v.Failed() {
		t.Errorf("Stray = %d, Failed = %t; want 1 and true", v.Stray, v.Failed())
	}
}

func TestJudgeFindsACallWhoseOutcomeWasStoredUnderAnotherShard(t *testing.T) {
	h := life()
	h[1].Shard = "shard-2" // the create's outcome appeared after the object had moved
	v := Judge([]string{"a"}, lifeCalls(), Histories{"a": h})
	if len(v.Misplaced) != 1 || v.Misplaced[0].Cause != "create" || v.Misplaced[0].Shard != "shard-2" {
		t.Errorf("Misplaced = %v, want the create stored while labelled for shard-2", v.Misplaced)
	}
}

func TestJudgeFindsObjectsLeftWithTheirFinalizerAndDrainLabel(t *testing.T) {
	h := life()[:4] // never deleted: still draining, with gopf's finalizer
	v := Judge([]string{"a"}, lifeCalls()[:2], Histories{"a": h})
	if want := []Leftover{{Object: "a", Finalizers: 1, Draining: true}}; !reflect.DeepEqual(v.Left, want) {
		t.Errorf("Left = %v, want %v", v.Left, want)
	}
}

func TestChangesCountsLabelChangesAndMovesWithinTheSpan(t *testing.T) {
	h := Histories{"a": life()}
	// drain (3), acknowledgement (4), assignment to shard-2 (5): the move.
	if changes, moves := h.Changes(at(0), at(7)); changes != 3 || moves != 1 {
		t.Errorf("Changes over the whole life = %d, %d; want 3, 1", changes, moves)
	}
	if changes, moves := h.Changes(at(0), at(4)); changes != 1 || moves != 0 {
		t.Errorf("Changes before the acknowledgement = %d, %d; want 1, 0", changes, moves)
	}
}

func TestShardsAtCountsEachObjectUnderItsLastLabel(t *testing.T) {
	h := Histories{"a": life(), "b": life()[:5]}
	if got, want := h.ShardsAt(at(4)), map[string]int{"": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("ShardsAt(4) = %v, want %v", got, want)
	}
	if got, want := h.ShardsAt(at(6)), map[string]int{"": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("ShardsAt(6) = %v, want %v (a is gone)", got, want)
	}
	if got, want := h.ShardsAt(at(2)), map[string]int{"shard-1": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("ShardsAt(2) = %v, want %v", got, want)
	}
}
