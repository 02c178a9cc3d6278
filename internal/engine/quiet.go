package engine

import (
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// quietRetry reports whether the record of a handler that failed again and
// will be retried need not be stored now: only its count of attempts and
// the time of its next one changed, not its error message, and nothing
// depends on the exact count or start across a restart (the handler has
// no Retries or Timeout limit). Such a retry is kept in the process's
// memory and stored with the object's next write, or at the latest on the
// 2nd, 4th, 8th, ... attempt, so that a handler that keeps failing costs
// a write per doubling of its attempts instead of one per attempt, and its
// watch event no reconcile. An operator that restarts meanwhile goes on
// from the stored record: it retries at once, and counts from there.
func quietRetry(o spec.Options, rec *state.Progress, before string) bool {
	n := rec.Retries
	return o.Retries == 0 && o.Timeout == 0 && n > 1 && n&(n-1) != 0 && rec.Message == before
}

// onlyQuietRetries reports whether the turn's state differs from what gopf
// knows only by quiet retries, so that its write can wait.
func (t *turn) onlyQuietRetries() bool {
	if len(t.quiet) == 0 || t.known == nil || t.st.Essence != t.known.Essence {
		return false
	}
	masked := &state.State{Essence: t.st.Essence, Progress: make(map[string]*state.Progress, len(t.st.Progress))}
	for id, rec := range t.st.Progress {
		masked.Progress[id] = rec
		if t.quiet[id] {
			known, ok := t.known.Progress[id]
			if !ok {
				return false
			}
			masked.Progress[id] = known
		}
	}
	return state.SameState(masked, t.known)
}
