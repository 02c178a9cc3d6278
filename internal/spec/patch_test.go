package spec

import (
	"encoding/json"
	"testing"
)

func TestSetPathCreatesAndReplacesOnTheWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start string
		path  []string
		value any
		want  string
	}{
		{"into an empty map, creating parents", `{}`, []string{"status", "a", "b"}, "v", `{"status":{"a":{"b":"v"}}}`},
		{"next to siblings, keeping them", `{"status":{"a":{"x":1},"y":2}}`, []string{"status", "a", "b"}, "v", `{"status":{"a":{"b":"v","x":1},"y":2}}`},
		{"over a leaf", `{"a":{"b":1}}`, []string{"a", "b"}, 2.0, `{"a":{"b":2}}`},
		{"over a map, replacing it whole", `{"a":{"b":{"c":1}}}`, []string{"a", "b"}, "flat", `{"a":{"b":"flat"}}`},
		{"through a scalar, replacing it by a map", `{"a":"flat"}`, []string{"a", "b"}, 1.0, `{"a":{"b":1}}`},
		{"through a list, replacing it by a map", `{"a":[1]}`, []string{"a", "b"}, 1.0, `{"a":{"b":1}}`},
		{"a null value", `{"a":{"b":1}}`, []string{"a", "b"}, nil, `{"a":{"b":null}}`},
		{"a one-part path", `{"a":1}`, []string{"b"}, true, `{"a":1,"b":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(tc.start), &m); err != nil {
				t.Fatalf("bad JSON in the test: %v", err)
			}
			SetPath(m, tc.path, tc.value)
			if got := toJSON(t, m); got != tc.want {
				t.Errorf("after SetPath(%q, %v): %s, want %s", tc.path, tc.value, got, tc.want)
			}
		})
	}
}

func TestPatchSetSplitsTheObjectFromItsStatus(t *testing.T) {
	var p Patch
	if err := p.Set("spec.a.b", 1); err != nil {
		t.Fatal(err)
	}
	p.SetLabel("app.kubernetes.io/name", ptr("web"))
	p.SetStatus("phase", "Ready")
	if err := p.Set("status", map[string]any{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	if got, want := toJSON(t, ObjectPatch(&p)), `{"metadata":{"labels":{"app.kubernetes.io/name":"web"}},"spec":{"a":{"b":1}}}`; got != want {
		t.Errorf("object patch = %s, want %s", got, want)
	}
	if got, want := toJSON(t, StatusPatch(&p)), `{"phase":"Ready","x":"y"}`; got != want {
		t.Errorf("status patch = %s, want %s", got, want)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func ptr(s string) *string { return &s }
