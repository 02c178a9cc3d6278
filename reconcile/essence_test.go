package reconcile

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestEssenceKeepsSpecLabelsAndForeignAnnotationsOnly(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "kopf.dev/v1",
		"kind":       "KopfExample",
		"metadata": map[string]any{
			"name":            "x",
			"resourceVersion": "42",
			"labels":          map[string]any{"app": "a"},
			"annotations": map[string]any{
				"mine":                  "kept",
				"gopf.dev/last-handled": "dropped",
				lastAppliedAnnotation:   "dropped",
				"gopf.devious/not-ours": "kept",
			},
		},
		"spec":   map[string]any{"field": "value"},
		"data":   map[string]any{"k": "v"},
		"status": map[string]any{"create_fn": map[string]any{"message": "hi"}},
	}
	got, _ := json.Marshal(essence(obj, "gopf.dev", nil))
	want := `{"data":{"k":"v"},"metadata":{"annotations":{"gopf.devious/not-ours":"kept","mine":"kept"},"labels":{"app":"a"}},"spec":{"field":"value"}}`
	if string(got) != want {
		t.Errorf("essence =\n %s\nwant\n %s", got, want)
	}
}

func TestEssenceLeavesOutEmptyMetadata(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"gopf.dev/x": "y"}, "labels": map[string]any{}},
		"spec":     map[string]any{},
	}
	got, _ := json.Marshal(essence(obj, "gopf.dev", nil))
	if string(got) != `{"spec":{}}` {
		t.Errorf("essence = %s", got)
	}
}

func TestEssenceSharesNothingWithTheObject(t *testing.T) {
	spec := map[string]any{"items": []any{"a"}}
	e := essence(map[string]any{"spec": spec}, "gopf.dev", nil)
	e["spec"].(map[string]any)["items"].([]any)[0] = "changed"
	if spec["items"].([]any)[0] != "a" {
		t.Error("changing the essence changed the object")
	}
}

func TestEssenceKeepsTheExtraFieldsHandlersName(t *testing.T) {
	obj := map[string]any{
		"spec":   map[string]any{"a": 1.0},
		"status": map[string]any{"phase": "Running", "other": "x"},
	}
	got, _ := json.Marshal(essence(obj, "gopf.dev", [][]string{{"status", "phase"}, {"status", "missing"}}))
	if string(got) != `{"spec":{"a":1},"status":{"phase":"Running"}}` {
		t.Errorf("essence = %s", got)
	}
}

func TestDiffListsAddedChangedAndRemovedFieldsByPath(t *testing.T) {
	old := map[string]any{"spec": map[string]any{"field": "value", "gone": 1.0, "list": []any{"a"}}}
	new := map[string]any{"spec": map[string]any{"field": "changed", "new": true, "list": []any{"a", "b"}}}
	var got []string
	for _, d := range diff(old, new) {
		got = append(got, d.String())
	}
	want := []string{
		"(change, spec.field, value, changed)",
		"(remove, spec.gone, 1, <nil>)",
		"(change, spec.list, [a], [a b])",
		"(add, spec.new, <nil>, true)",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff =\n %v\nwant\n %v", got, want)
	}
	if d := diff(old, deepCopyJSON(old)); len(d) != 0 {
		t.Errorf("diff of equal values = %v", d)
	}
}

func TestApplyMergePatchSetsReplacesAndRemoves(t *testing.T) {
	target := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "b": "2"}}, "spec": map[string]any{"x": 1.0}}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": nil, "c": "3"}}, "spec": "replaced", "new": map[string]any{"k": "v"}}
	got, _ := json.Marshal(applyMergePatch(target, patch))
	if string(got) != `{"metadata":{"labels":{"b":"2","c":"3"}},"new":{"k":"v"},"spec":"replaced"}` {
		t.Errorf("patched = %s", got)
	}
}
