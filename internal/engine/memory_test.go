package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/internal/gate"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestObjectMemosAreSeededFromTheOperatorMemoOnceStartupIsDone(t *testing.T) {
	sh := &Shared{Memo: &spec.Memo{}, Gate: &gate.Gate{}}
	sh.Memo.Set("base", "options")
	ms := newMemories(sh)
	early := types.NamespacedName{Namespace: "ns", Name: "early"}

	// An index function sees the object while startup handlers still run.
	m := ms.get(early, "u1")
	if got := m.memo.Get("base"); got != nil {
		t.Errorf("before startup is done the memo has base = %v, want no seeding yet", got)
	}
	m.memo.Set("region", "own")
	sh.Memo.Set("region", "startup")
	sh.Memo.Set("zone", "startup")
	sh.Gate.SetStarted()

	m = ms.get(early, "u1")
	if got := [3]any{m.memo.Get("base"), m.memo.Get("region"), m.memo.Get("zone")}; got != [3]any{"options", "own", "startup"} {
		t.Errorf("seeded memo (base, region, zone) = %v; want the operator's keys, and the object's own region kept", got)
	}
	later := ms.get(types.NamespacedName{Namespace: "ns", Name: "later"}, "u2")
	later.memo.Set("zone", "mine")
	sh.Memo.Set("base", "changed later")
	if got := [3]any{later.memo.Get("region"), sh.Memo.Get("zone"), ms.get(early, "u1").memo.Get("base")}; got != [3]any{"startup", "startup", "options"} {
		t.Errorf("(later's region, operator zone, early's base) = %v; want copies, independent afterwards", got)
	}

	if ms.find(early, "u1") != &m.memo || ms.find(early, "") != &m.memo {
		t.Error("find does not return the object's memo")
	}
	if ms.find(early, "other-uid") != nil || ms.find(types.NamespacedName{Name: "unknown"}, "") != nil {
		t.Error("find returns a memo for an object it does not know")
	}
	if ms.get(early, "u3") == m {
		t.Error("an object replaced under the same name kept the old memory")
	}
}
