package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decoded parses a patch body, failing the test if it is not JSON.
func decoded(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: not JSON: %v", body, err)
	}
	return out
}

func TestStatusPatchHoldsTheResultsAndTheGeneration(t *testing.T) {
	cases := []struct {
		name    string
		n       int
		updated bool
		field   string
		want    string
	}{
		{"one create", 1, false, "", `{"status":{"create_fn":{"message":"created"},"baseline":{"observedGeneration":1}}}`},
		{"two creates", 2, false, "", `{"status":{"create_fn_1":{"message":"created"},"create_fn_2":{"message":"created"},"baseline":{"observedGeneration":1}}}`},
		{"one update", 1, true, `up"d\`, `{"status":{"update_fn":{"message":"updated","field":"up\"d\\"},"baseline":{"observedGeneration":1}}}`},
	}
	for _, c := range cases {
		got := decoded(t, statusPatch(c.n, c.updated, c.field, 1))
		if want := decoded(t, []byte(c.want)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
}

func TestStatusPatchWritesLargeGenerations(t *testing.T) {
	got := decoded(t, statusPatch(1, false, "", 1<<40))
	status, _ := got["status"].(map[string]any)
	observed, _ := status[observedKey].(map[string]any)
	if g, _ := observed["observedGeneration"].(float64); g != 1<<40 {
		t.Errorf("observedGeneration %v, want %d", observed["observedGeneration"], int64(1<<40))
	}
}

func TestAnnotationPatchHoldsTheResultsAndTheFieldHandled(t *testing.T) {
	got := decoded(t, annotationPatch(2, true, "blue"))
	want := decoded(t, []byte(`{"metadata":{"annotations":{"bench.gopf.dev/update_fn_1":"blue","bench.gopf.dev/update_fn_2":"blue",`+
		`"bench.gopf.dev/baseline-observed":"blue"}}}`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("update: %v, want %v", got, want)
	}
	got = decoded(t, annotationPatch(1, false, "red"))
	want = decoded(t, []byte(`{"metadata":{"annotations":{"bench.gopf.dev/create_fn":"created","bench.gopf.dev/baseline-observed":"red"}}}`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("create: %v, want %v", got, want)
	}
}
