package reconcile

import (
	"encoding/json"
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
	got, _ := json.Marshal(essence(obj, "gopf.dev"))
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
	got, _ := json.Marshal(essence(obj, "gopf.dev"))
	if string(got) != `{"spec":{}}` {
		t.Errorf("essence = %s", got)
	}
}

func TestEssenceSharesNothingWithTheObject(t *testing.T) {
	spec := map[string]any{"items": []any{"a"}}
	e := essence(map[string]any{"spec": spec}, "gopf.dev")
	e["spec"].(map[string]any)["items"].([]any)[0] = "changed"
	if spec["items"].([]any)[0] != "a" {
		t.Error("changing the essence changed the object")
	}
}
