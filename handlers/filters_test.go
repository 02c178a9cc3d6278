package handlers_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
)

func TestFiltersMatchLiteralsPresenceAndFunctions(t *testing.T) {
	cases := []struct {
		name    string
		filter  handlers.Filter
		value   any
		present bool
		want    bool
	}{
		{"equal string", handlers.Equal("a"), "a", true, true},
		{"equal other string", handlers.Equal("a"), "b", true, false},
		{"equal int vs float", handlers.Equal(3), 3.0, true, true},
		{"equal map", handlers.Equal(map[string]int{"x": 1}), map[string]any{"x": 1.0}, true, true},
		{"equal absent", handlers.Equal("a"), nil, false, false},
		{"present", handlers.Present, "", true, true},
		{"present absent", handlers.Present, nil, false, false},
		{"absent", handlers.Absent, nil, false, true},
		{"absent present", handlers.Absent, "x", true, false},
		{"func", handlers.Func(func(v any) bool { return v == nil }), nil, false, true},
		{"zero filter", handlers.Filter{}, nil, false, true},
	}
	for _, tc := range cases {
		if got := tc.filter.Match(tc.value, tc.present); got != tc.want {
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
	o := r.Registrations()[0].Options
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

func TestOptionsThatDoNotFitTheHandlerKindAreRejected(t *testing.T) {
	podFn := func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) { return nil, nil }
	cases := map[string]struct {
		register func(*handlers.Registry)
		want     string
	}{
		"nil label value":     {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.Labels{"a": nil}) }, "Absent"},
		"value without field": {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.Value("x")) }, "need a Field"},
		"old on create": {func(r *handlers.Registry) {
			handlers.OnCreate(r, podFn, handlers.Field("spec.a"), handlers.OldValue("x"))
		}, "only for update"},
		"value with old": {func(r *handlers.Registry) {
			handlers.OnField(r, "spec.a", podFn, handlers.Value(1), handlers.OldValue(2))
		}, "not both"},
		"optional on create":   {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.Optional()) }, "only for delete"},
		"deleted on update":    {func(r *handlers.Registry) { handlers.OnUpdate(r, podFn, handlers.Deleted()) }, "only for resume"},
		"empty field segment":  {func(r *handlers.Registry) { handlers.OnField(r, "spec..a", podFn) }, "empty segment"},
		"empty field":          {func(r *handlers.Registry) { handlers.OnField(r, "", podFn) }, "needs a field path"},
		"zero retries":         {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.Retries(0)) }, "Retries must be positive"},
		"negative via options": {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.Options{Backoff: -1}) }, "cannot be negative"},
		"nil when":             {func(r *handlers.Registry) { handlers.OnCreate(r, podFn, handlers.When[*corev1.Pod](nil)) }, "When(nil)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := handlers.NewRegistry()
			tc.register(r)
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
			if len(r.Registrations()) != 0 {
				t.Error("a bad registration was kept")
			}
		})
	}
}

func TestPatchRoutesStatusAndNullsRemovals(t *testing.T) {
	var p handlers.Patch
	if !p.Empty() {
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
	p.MergeStatus("result", map[string]any{"a": 1})
	p.MergeStatus("result", map[string]any{"b": 2})
	if err := p.Set("spec..x", 1); err == nil {
		t.Error("a bad path was accepted")
	}
	obj, status := p.Object(), p.Status()
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

func TestSubHandlerProblemsAreReported(t *testing.T) {
	c := &handlers.Cause{HandlerID: "parent"}
	ok := func(ctx context.Context, c *handlers.Cause) (any, error) { return nil, nil }
	c.Register("a", ok)
	c.Register("a", ok)
	c.Register("", ok)
	c.Register("b", nil)
	subs, err := c.SubHandlers()
	if len(subs) != 4 || subs[0].Options.ID != "parent/a" {
		t.Errorf("subs = %v", subs)
	}
	for _, want := range []string{"twice", "empty id", `"parent/b" is nil`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}
