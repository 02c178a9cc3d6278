package engine

import (
	"errors"
	"fmt"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Objects near the size limit. etcd refuses a request larger than its
// --max-request-bytes (1.5 MiB by default) with "etcdserver: request is too
// large", so an object cannot grow past about that size, whatever the API
// server accepts. gopf keeps a copy of the last-handled essence on the
// object; for an object whose spec is most of that limit, the copy alone
// would double it. So gopf measures before it writes:
//
//   - The state is kept in a compact form when the full one would not fit:
//     the last-handled essence (and each update handler's handled essence)
//     becomes a digest of the whole plus the values of the fields handlers
//     name (Field options), e.g. {"$gopf":{"bytes":921640,"digest":"sha256:…"},"spec":{"replicas":3}}.
//     While an object's state is compact, handlers see the compact form too:
//     Old and New hold the named fields and the digest, and Diff lists the
//     changes of the named fields plus changes under $gopf (its digest and
//     size) when anything else changed. Handlers narrowed to a field see that field as usual.
//     The full form comes back with the next write of state that fits.
//   - A handler result that would not fit on the object is the handler's
//     permanent failure, reported with a Warning Event that says why; the
//     result is not written, and the handler is not retried.
//   - A write the API server refuses as too large anyway (a handler's own
//     patch, say) is reported once with a Warning Event and not retried at
//     the rate limiter's pace: the next change of the object tries again.

const (
	// objectSizeLimit is etcd's default request limit, which bounds the
	// size of any object.
	objectSizeLimit = 3 << 19 // 1.5 MiB
	// objectSizeBudget is how large gopf lets an object become with its
	// state and results: the limit less room for the request's envelope and
	// the metadata the API server adds to each write (managedFields).
	objectSizeBudget = objectSizeLimit - 128<<10
)

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
// stored on the object, with the object's size, the result's and the
// limit.
func (t *turn) checkResult(id string, result any) error {
	if result == nil {
		return nil
	}
	data, err := state.Marshal(result)
	if err != nil {
		return nil // reported where the result is turned into JSON
	}
	if size := t.measure(); size+len(data) > objectSizeBudget {
		return handlers.Permanent(fmt.Errorf("its result (%d bytes as JSON) cannot be stored in status.%s: with the object (%d bytes) it exceeds gopf's limit of %d bytes per object (etcd refuses requests over %d bytes); the result is dropped",
			len(data), id, size, objectSizeBudget, objectSizeLimit))
	}
	return nil
}

// fits reports whether st can be stored on an object of base bytes (its
// size without gopf's state, with the results): within the budget, and
// within the annotations' limit where the state is kept in annotations.
func (t *turn) fits(st *state.State, base int) bool {
	var scratch spec.Patch
	return base+len(st.Encode()) <= objectSizeBudget && !errors.Is(t.store.Save(&scratch, t.raw, st), state.ErrTooLarge)
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
	results := 0
	for _, r := range t.results {
		data, _ := state.Marshal(r)
		results += len(data)
	}
	base := t.measure() + results
	if state.IsCompactState(t.st) {
		if t.full == "" || t.st.Encode() == t.loaded.Encode() {
			return // unchanged: no write for the form alone
		}
		full := t.st.Clone()
		expand := func(s string) string {
			if s == t.essence {
				return t.full
			}
			return s
		}
		full.Essence = expand(full.Essence)
		for _, rec := range full.Progress {
			rec.Handled = expand(rec.Handled)
		}
		if !state.IsCompactState(full) && t.fits(full, base) {
			t.st = full
		}
		return
	}
	if t.fits(t.st, base) {
		return
	}
	compacted := map[string]string{}
	compact := func(s string) string {
		if s == "" || state.IsCompact(s) {
			return s
		}
		if c, ok := compacted[s]; ok {
			return c
		}
		c, _ := state.CompactEssence(s, state.DecodeJSON(s), t.k.extra)
		compacted[s] = c
		return c
	}
	t.st.Essence = compact(t.st.Essence)
	for _, rec := range t.st.Progress {
		rec.Handled = compact(rec.Handled)
	}
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
