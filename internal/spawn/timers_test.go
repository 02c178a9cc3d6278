package spawn

import (
	"testing"

	"github.com/gopf-dev/gopf/internal/state"
)

func TestATimerComparesItsResultWithTheNewestOfItsWriteAndTheObjectCopy(t *testing.T) {
	steady := map[string]any{"state": "steady"}
	last := &writtenResult{value: steady, version: "20"}
	cases := []struct {
		name    string
		stored  any    // the timer's result in the object copy's status
		version string // the copy's resourceVersion
		last    *writtenResult
		result  any
		write   bool
	}{
		{"never written, copy without it", nil, "10", nil, steady, true},
		{"never written, copy with it", steady, "10", nil, steady, false},
		{"copy older than the last write repeats nothing", nil, "10", last, steady, false},
		{"copy older than the last write, a changed result", nil, "10", last, map[string]any{"state": "moved"}, true},
		{"copy older shows an old value the result returns to", map[string]any{"state": "old"}, "10", last, map[string]any{"state": "old"}, true},
		{"copy as new as the last write", steady, "20", last, steady, false},
		{"copy newer: someone changed the result since", map[string]any{"state": "edited"}, "30", last, steady, true},
		{"versions that do not compare trust the copy", nil, "x", last, steady, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := state.Changes(newestResult(c.stored, c.version, c.last), c.result); got != c.write {
				t.Errorf("written: %v, want %v", got, c.write)
			}
		})
	}
}

func TestAfterMergeIsWhatTheAPIServerStores(t *testing.T) {
	stored := map[string]any{"a": int64(1), "b": map[string]any{"c": "x", "d": "y"}}
	got := afterMerge(stored, map[string]any{"a": int64(2), "b": map[string]any{"d": nil}})
	want := map[string]any{"a": int64(2), "b": map[string]any{"c": "x"}}
	if !state.SameJSON(got, want) {
		t.Errorf("afterMerge: %v, want %v", got, want)
	}
	if !state.SameJSON(stored, map[string]any{"a": int64(1), "b": map[string]any{"c": "x", "d": "y"}}) {
		t.Errorf("afterMerge changed what was stored: %v", stored)
	}
	if got := afterMerge(stored, "plain"); got != "plain" {
		t.Errorf("a result that is not an object replaces: %v", got)
	}
	if got := afterMerge("plain", map[string]any{"a": nil, "b": int64(1)}); !state.SameJSON(got, map[string]any{"b": int64(1)}) {
		t.Errorf("an object replaces what is not one: %v", got)
	}
}
