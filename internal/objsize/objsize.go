package objsize

import (
	"fmt"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

const (
	// Limit is etcd's default request limit, which bounds the size of any
	// object.
	Limit = 3 << 19 // 1.5 MiB
	// Budget is how large gopf lets an object become with its state and
	// results: the limit less room for the request's envelope and the
	// metadata the API server adds to each write (managedFields).
	Budget = Limit - 128<<10
)

// CheckResult returns a permanent error if handler id's result cannot be
// stored on the object, whose size without gopf's state objectBytes
// measures (called only when needed), with the object's size, the
// result's and the limit.
func CheckResult(id string, result any, objectBytes func() int) error {
	if result == nil {
		return nil
	}
	data, err := state.Marshal(result)
	if err != nil {
		return nil // reported where the result is turned into JSON
	}
	if size := objectBytes(); size+len(data) > Budget {
		return handlers.Permanent(fmt.Errorf("its result (%d bytes as JSON) cannot be stored in status.%s: with the object (%d bytes) it exceeds gopf's limit of %d bytes per object (etcd refuses requests over %d bytes); the result is dropped",
			len(data), id, size, Budget, Limit))
	}
	return nil
}

// ResultsBytes is the size of handlers' results as JSON.
func ResultsBytes(results map[string]any) int {
	n := 0
	for _, r := range results {
		data, _ := state.Marshal(r)
		n += len(data)
	}
	return n
}

// Compact puts the essences st records (the last-handled one and each
// record's handled one) in compact form, keeping the fields at the paths
// extra: each distinct essence is compacted once.
func Compact(st *state.State, extra [][]string) {
	compacted := map[string]string{}
	compact := func(s string) string {
		if s == "" || state.IsCompact(s) {
			return s
		}
		if c, ok := compacted[s]; ok {
			return c
		}
		c, _ := state.CompactEssence(s, state.DecodeJSON(s), extra)
		compacted[s] = c
		return c
	}
	st.Essence = compact(st.Essence)
	for _, rec := range st.Progress {
		rec.Handled = compact(rec.Handled)
	}
}

// Expanded is a copy of st where the compact essence compact, wherever st
// records it, is its full form full.
func Expanded(st *state.State, compact, full string) *state.State {
	out := st.Clone()
	expand := func(s string) string {
		if s == compact {
			return full
		}
		return s
	}
	out.Essence = expand(out.Essence)
	for _, rec := range out.Progress {
		rec.Handled = expand(rec.Handled)
	}
	return out
}
