package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestFiltersMatchLiteralsPresenceAndFunctions(t *testing.T) {
	cases := []struct {
		name    string
		filter  any
		value   any
		present bool
		want    bool
	}{
		{"equal string", "a", "a", true, true},
		{"equal other string", "a", "b", true, false},
		{"equal int vs float", 3, 3.0, true, true},
		{"equal map", map[string]int{"x": 1}, map[string]any{"x": 1.0}, true, true},
		{"equal absent", "a", nil, false, false},
		{"present", handlers.Present, "", true, true},
		{"present absent", handlers.Present, nil, false, false},
		{"absent", handlers.Absent, nil, false, true},
		{"absent present", handlers.Absent, "x", true, false},
		{"func", func(v any) bool { return v == nil }, nil, false, true},
	}
	for _, tc := range cases {
		if got := handlers.MatchFilter(tc.filter, tc.value, tc.present); got != tc.want {
			t.Errorf("%s: Match(%v, %v) = %v, want %v", tc.name, tc.value, tc.present, got, tc.want)
		}
	}
}

func TestShorthandFiltersBecomeFilters(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.Labels{
		"exact":   "v",
		"present": handlers.Present,
		"fn":      func(v string) bool { return strings.HasPrefix(v, "x") },
	})
	o := handlers.HandlersOf(r)[0].Options
	if !o.Labels["exact"].Match("v", true) || o.Labels["exact"].Match("w", true) {
		t.Error("exact label filter")
	}
	if !o.Labels["present"].Match("", true) {
		t.Error("present label filter")
	}
	if !o.Labels["fn"].Match("xy", true) || o.Labels["fn"].Match("y", true) {
		t.Error("function label filter")
	}
}

func TestPatchRoutesStatusAndNullsRemovals(t *testing.T) {
	var p handlers.Patch
	if !(*spec.Patch)(&p).Empty() {
		t.Fatal("new patch not empty")
	}
	v := "1"
	p.SetLabel("app", &v)
	p.SetAnnotation("gone", nil)
	if err := p.Set("spec.replicas", 3); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("status.phase", "Ready"); err != nil {
		t.Fatal(err)
	}
	spec.MergeStatus((*spec.Patch)(&p), "result", map[string]any{"a": 1})
	spec.MergeStatus((*spec.Patch)(&p), "result", map[string]any{"b": 2})
	if err := p.Set("spec..x", 1); err == nil {
		t.Error("a bad path was accepted")
	}
	obj, status := spec.ObjectPatch((*spec.Patch)(&p)), spec.StatusPatch((*spec.Patch)(&p))
	meta := obj["metadata"].(map[string]any)
	if meta["labels"].(map[string]any)["app"] != "1" || meta["annotations"].(map[string]any)["gone"] != nil {
		t.Errorf("metadata = %v", meta)
	}
	if obj["spec"].(map[string]any)["replicas"] != 3 {
		t.Errorf("spec = %v", obj["spec"])
	}
	if status["phase"] != "Ready" || len(status["result"].(map[string]any)) != 2 {
		t.Errorf("status = %v", status)
	}
	if _, ok := obj["status"]; ok {
		t.Error("status leaked into the object patch")
	}
}

func TestSubHandlersRegisteredDuringACallGoToTheEngineAndTheirProblemsAreReported(t *testing.T) {
	r := handlers.NewRegistry()
	ok := func(ctx context.Context, c *handlers.Cause) (any, error) { return "sub " + c.HandlerID, nil }
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		c.Register("a", ok, handlers.Retries(2))
		c.Register("a", ok)
		c.Register("", ok)
		c.Register("b", nil)
		c.Register("c", ok, handlers.Retries(0))
		return nil, nil
	})
	call := &handlers.Extras{SubsAllowed: true} // as for a change handler
	if _, err := handlers.HandlersOf(r)[0].Call(context.Background(), &corev1.Pod{}, handlers.CauseWith(r, "parent", call)); err != nil {
		t.Fatal(err)
	}
	if len(call.Subs) != 1 {
		t.Fatalf("got %d sub-handlers, want only the good one", len(call.Subs))
	}
	sub := call.Subs[0]
	if sub.Kind != spec.KindSub || sub.Options.ID != "parent/a" || sub.Options.Retries != 2 || !strings.HasPrefix(sub.Source, "filters_test.go:") {
		t.Errorf("sub-handler = %s with options %+v", sub, sub.Options)
	}
	if got, err := sub.Call(context.Background(), nil, &handlers.Cause{HandlerID: "parent/a"}); got != "sub parent/a" || err != nil {
		t.Errorf("calling the sub-handler = %v, %v", got, err)
	}
	err := call.SubErr()
	for _, want := range []string{`"parent/a" is registered twice`, "empty id", `"parent/b" is nil`, "Retries must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestSubHandlersOutsideChangeHandlersAreAnErrorThatIsLogged(t *testing.T) {
	var logged []string
	c := handlers.CauseWith(handlers.NewRegistry(), "timer", &handlers.Extras{})
	c.Log = funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	c.Register("a", func(ctx context.Context, c *handlers.Cause) (any, error) { return nil, nil })
	if len(logged) != 1 || !strings.Contains(logged[0], "Cause.Register is for change handlers only") || !strings.Contains(logged[0], `"subhandler"="a"`) {
		t.Fatalf("logged %q, want one error naming the sub-handler", logged)
	}
}

// listedIn returns indexes with one index "listed" whose key "names" holds
// the given names.
func listedIn(names ...string) *spec.Indexes {
	ixs := spec.NewIndexes()
	ix := spec.AddIndex(ixs, "listed")
	for _, n := range names {
		spec.SetEntries(ix, "ns/"+n, map[any]any{"names": n})
	}
	return ixs
}

// listedNames reads the index of listedIn.
var listedNames = handlers.OnIndex(handlers.NewRegistry(), "listed", func(*corev1.Pod, *handlers.Cause) map[string]string { return nil })

func listed(ixs *handlers.Indexes, name string) bool {
	for _, v := range listedNames.Get(ixs, "names") {
		if v == name {
			return true
		}
	}
	return false
}

func TestWhenGetsTheObjectsIdentityLabelsAndTheIndexesItIsGiven(t *testing.T) {
	r := handlers.NewRegistry()
	var seen *handlers.Cause
	handlers.OnCreate(r, createFn, handlers.ID("filtered"),
		handlers.When(func(p *corev1.Pod, c *handlers.Cause) bool { seen = c; return listed(c.Indexes, c.Labels["app"]) }))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	o := handlers.HandlersOf(r)[0].Options
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID, pod.Labels = "pod-1", "ns", "uid-1", map[string]string{"app": "web"}
	if !o.When(pod, listedIn("web")) || o.When(pod, listedIn("db")) {
		t.Error("When does not look the object's label up in the index")
	}
	if seen.Name != "pod-1" || seen.Namespace != "ns" || seen.UID != "uid-1" || seen.Annotations == nil {
		t.Errorf("When's Cause = %+v, want the pod's identity and non-nil annotations", seen)
	}
}

func TestIndexFunctionsThatReadIndexesGetTheOperatorsIndexes(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnIndex(r, "named", func(p *corev1.Pod, c *handlers.Cause) map[string]bool {
		return map[string]bool{p.Name: listed(c.Indexes, p.Name)}
	})
	handlers.OnFlatIndex(r, "flat", func(_ *corev1.Pod, c *handlers.Cause) int { return len(listedNames.Keys(c.Indexes)) })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	pod.Name = "pod-1"
	c := handlers.CauseWith(r, "named", &handlers.Extras{})
	c.Indexes = (*handlers.Indexes)(listedIn("pod-1"))
	hs := handlers.HandlersOf(r)
	out, err := hs[0].Call(context.Background(), pod, c)
	if err != nil || out.(map[any]any)["pod-1"] != true {
		t.Errorf("index entries = %v, %v; want pod-1: true, read from the index given in Cause.Indexes", out, err)
	}
	out, err = hs[1].Call(context.Background(), pod, c)
	if err != nil || out.(map[any]any)[nil] != 1 {
		t.Errorf("flat index entries = %v, %v; want nil: 1", out, err)
	}
}
