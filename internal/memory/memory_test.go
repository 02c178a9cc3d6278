package memory

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/internal/gate"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestObjectMemosAreSeededFromTheOperatorMemoOnceStartupIsDone(t *testing.T) {
	operator, g := &spec.Memo{}, &gate.Gate{}
	operator.Set("base", "options")
	ms := New(g, operator)
	early := types.NamespacedName{Namespace: "ns", Name: "early"}

	// An index function sees the object while startup handlers still run.
	m := ms.Get(early, "u1")
	if got := m.Memo.Get("base"); got != nil {
		t.Errorf("before startup is done the memo has base = %v, want no seeding yet", got)
	}
	m.Memo.Set("region", "own")
	operator.Set("region", "startup")
	operator.Set("zone", "startup")
	g.SetStarted()

	m = ms.Get(early, "u1")
	if got := [3]any{m.Memo.Get("base"), m.Memo.Get("region"), m.Memo.Get("zone")}; got != [3]any{"options", "own", "startup"} {
		t.Errorf("seeded memo (base, region, zone) = %v; want the operator's keys, and the object's own region kept", got)
	}
	later := ms.Get(types.NamespacedName{Namespace: "ns", Name: "later"}, "u2")
	later.Memo.Set("zone", "mine")
	operator.Set("base", "changed later")
	if got := [3]any{later.Memo.Get("region"), operator.Get("zone"), ms.Get(early, "u1").Memo.Get("base")}; got != [3]any{"startup", "startup", "options"} {
		t.Errorf("(later's region, operator zone, early's base) = %v; want copies, independent afterwards", got)
	}

	if ms.Find(early, "u1") != &m.Memo || ms.Find(early, "") != &m.Memo {
		t.Error("find does not return the object's memo")
	}
	if ms.Find(early, "other-uid") != nil || ms.Find(types.NamespacedName{Name: "unknown"}, "") != nil {
		t.Error("find returns a memo for an object it does not know")
	}
	if ms.Get(early, "u3") == m {
		t.Error("an object replaced under the same name kept the old memory")
	}
}
