package engine

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestObjectMemosAreSeededFromTheOperatorMemoOnceStartupIsDone(t *testing.T) {
	sh := &shared{memo: &spec.Memo{}, gate: &gate{}}
	sh.memo.Set("base", "options")
	ms := newMemories(sh)
	early := types.NamespacedName{Namespace: "ns", Name: "early"}

	// An index function sees the object while startup handlers still run.
	m := ms.get(early, "u1")
	if got := m.memo.Get("base"); got != nil {
		t.Errorf("before startup is done the memo has base = %v, want no seeding yet", got)
	}
	m.memo.Set("region", "own")
	sh.memo.Set("region", "startup")
	sh.memo.Set("zone", "startup")
	sh.gate.setStarted()

	m = ms.get(early, "u1")
	if got := [3]any{m.memo.Get("base"), m.memo.Get("region"), m.memo.Get("zone")}; got != [3]any{"options", "own", "startup"} {
		t.Errorf("seeded memo (base, region, zone) = %v; want the operator's keys, and the object's own region kept", got)
	}
	later := ms.get(types.NamespacedName{Namespace: "ns", Name: "later"}, "u2")
	later.memo.Set("zone", "mine")
	sh.memo.Set("base", "changed later")
	if got := [3]any{later.memo.Get("region"), sh.memo.Get("zone"), ms.get(early, "u1").memo.Get("base")}; got != [3]any{"startup", "startup", "options"} {
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

func TestProbesGetTheOperatorsMemoAndIndexes(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return map[string]any{"region": c.Memo.Get("region"), "pods": c.Indexes.Get("pods").Get(nil)}, nil
	}, handlers.ID("view"))
	set := contract.SetOf(reg)
	op := set.OperatorOf(t.Name())
	op.Memo.Set("region", "eu-1")
	spec.SetEntries(spec.AddIndex(op.Indexes, "pods"), "ns/a", map[any]any{nil: "a"})
	p := &prober{probes: set.Handlers(spec.KindProbe), sh: &shared{set: set, memo: op.Memo, indexes: op.Indexes}, log: logr.Discard(), ttl: 1}
	results, err := p.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	view, _ := results["view"].(map[string]any)
	if view["region"] != "eu-1" || len(view["pods"].([]any)) != 1 {
		t.Errorf("the probe saw %v; want the operator memo's region and the flat index's one value", results)
	}
}
