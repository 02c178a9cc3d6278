//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

func at(s int) time.Time { return time.Unix(1_000_000+int64(s), 0) }

func TestCallsOfOneReplicaPerObjectAndCauseAreNoDuplicates(t *testing.T) {
	cs := []calls.Call{
		{At: at(1), Cause: "create", Object: "a", Replica: "s1"},
		{At: at(2), Cause: "create", Object: "b", Replica: "s2"},
		{At: at(3), Cause: "update", Object: "a", Replica: "s2"}, // moved between causes: fine
		{At: at(4), Cause: "create", Object: "a", Replica: "s1"}, // a retry in one replica
	}
	if got := duplicates(cs, nil, nil); len(got) != 0 {
		t.Errorf("duplicates = %+v, want none", got)
	}
}

func TestACallMadeAgainByAnotherReplicaIsADuplicate(t *testing.T) {
	cs := []calls.Call{
		{At: at(5), Cause: "create", Object: "a", Replica: "s2"},
		{At: at(1), Cause: "create", Object: "a", Replica: "s1"},
	}
	got := duplicates(cs, nil, map[string]map[string]time.Time{"create": {"a": at(2)}})
	want := Duplicate{Object: "a", Cause: "create", First: "s1", Again: "s2"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("duplicates = %+v, want [%+v]", got, want)
	}
}

func TestACallCutByTheKillOfItsReplicaIsCountedApart(t *testing.T) {
	cs := []calls.Call{
		{At: at(1), Cause: "create", Object: "cut", Replica: "s1"},
		{At: at(9), Cause: "create", Object: "cut", Replica: "s2"},
		{At: at(1), Cause: "create", Object: "stored", Replica: "s1"},
		{At: at(9), Cause: "create", Object: "stored", Replica: "s2"},
		{At: at(4), Cause: "create", Object: "after", Replica: "s1"},
		{At: at(9), Cause: "create", Object: "after", Replica: "s2"},
	}
	killed := map[string]time.Time{"s1": at(3)}
	stored := map[string]map[string]time.Time{"create": {"stored": at(2)}}
	got := map[string]bool{}
	for _, d := range duplicates(cs, killed, stored) {
		got[d.Object] = d.CutByKill
	}
	want := map[string]bool{
		"cut":    true,  // killed after the call began, outcome never seen
		"stored": false, // the outcome was stored before the kill: handled twice
		"after":  false, // begun after the kill: not the call it cut
	}
	for obj, cut := range want {
		if c, ok := got[obj]; !ok || c != cut {
			t.Errorf("object %s: duplicate %v, cut by kill %v; want a duplicate, cut %v", obj, ok, c, cut)
		}
	}
	if cut, other := countDuplicates(duplicates(cs, killed, stored)); cut != 1 || other != 2 {
		t.Errorf("countDuplicates = %d cut, %d other; want 1 and 2", cut, other)
	}
}
