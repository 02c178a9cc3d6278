package engine

import (
	"errors"
	"fmt"

	"github.com/gopf-dev/gopf/internal/objsize"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Objects near the size limit: the turn measures its object and fits the
// state to it (see internal/objsize for the policy).

// matchStoredForm makes the turn compare essences in the form gopf last
// stored: when that is compact, the current essence is compacted the same
// way, so that an unchanged object is not taken for a changed one.
func (t *turn) matchStoredForm() {
	if !state.IsCompactState(t.known) {
		return
	}
	t.full = t.essence
	t.essence, t.essenceTree = state.CompactEssence(t.essence, t.essenceTree, t.k.extra)
}

// measure returns the object's size as JSON without gopf's stored state,
// measured once per turn.
func (t *turn) measure() int {
	if t.size == 0 {
		data, _ := state.Marshal(t.raw)
		t.size = len(data) - len(t.loaded.Encode())
	}
	return t.size
}

// checkResult returns a permanent error if handler id's result cannot be
// stored on the object (see objsize.CheckResult).
func (t *turn) checkResult(id string, result any) error {
	return objsize.CheckResult(id, result, t.measure)
}

// fits reports whether st can be stored on an object of base bytes (its
// size without gopf's state, with the results): within the budget, and
// within the annotations' limit where the state is kept in annotations.
func (t *turn) fits(st *state.State, base int) bool {
	var scratch spec.Patch
	return base+len(st.Encode()) <= objsize.Budget && !errors.Is(t.store.Save(&scratch, t.raw, st), state.ErrTooLarge)
}

// fitState puts the state about to be saved in the form that fits (see
// fitForm) and reports whether it differs from the stored state, that is,
// whether it is to be written.
func (t *turn) fitState() (changed bool) {
	changed = !state.SameState(t.st, t.loaded)
	if !changed && len(t.results) == 0 || t.st.Essence == "" && len(t.st.Progress) == 0 {
		return changed // nothing is written, or nothing large: nothing needs to fit
	}
	t.fitForm()
	return !state.SameState(t.st, t.loaded)
}

// fitForm makes the state compact when the full form would take the object
// over the budget, and full again when it fits and the state is written
// anyway.
func (t *turn) fitForm() {
	base := t.measure() + objsize.ResultsBytes(t.results)
	if state.IsCompactState(t.st) {
		if t.full == "" || t.st.Encode() == t.loaded.Encode() {
			return // unchanged: no write for the form alone
		}
		if full := objsize.Expanded(t.st, t.essence, t.full); !state.IsCompactState(full) && t.fits(full, base) {
			t.st = full
		}
		return
	}
	if t.fits(t.st, base) {
		return
	}
	objsize.Compact(t.st, t.k.extra)
	t.log.V(1).Info("the object is too large for a full copy of its essence; keeping a digest and the fields handlers name", "bytes", base)
}

// writeTooLarge reports a write that the API server refused for its size:
// once per object and process, as a Warning Event and a log line. It
// reports whether err was such a refusal, which is not retried.
func (t *turn) writeTooLarge(err error) bool {
	if !state.IsTooLarge(err) {
		return false
	}
	if !t.mem.TooLarge {
		t.mem.TooLarge = true
		msg := fmt.Sprintf("gopf's write was refused as too large (%v); it is not retried until the object changes", err)
		t.log.Info("WARNING: " + msg)
		t.k.recorder.Eventf(t.obj, nil, "Warning", "TooLarge", "Reconcile", "%s", msg)
	}
	return true
}
