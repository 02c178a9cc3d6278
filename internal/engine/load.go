package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/state"
)

// Refresh re-reads the object's JSON form and essence after obj changed.
func (t *turn) refresh() error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return fmt.Errorf("converting %s %s/%s: %w", t.k.GVK.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
	}
	t.raw = raw
	e := state.Essence(raw, t.k.opts.Prefix, t.k.extra)
	data, err := state.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding the essence of %s %s/%s: %w", t.k.GVK.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
	}
	t.essence = string(data)
	// Handlers see the essence as decoded JSON, as the stored one they
	// are compared with reads.
	if tree, ok := state.AsDecodedJSON(e); ok {
		t.essenceTree = tree
	} else {
		t.essenceTree = state.DecodeJSON(t.essence)
	}
	return nil
}

// refreshMetadata takes into t.raw what gopf's own finalizer patch changed
// in obj: its finalizers and resourceVersion. That patch is guarded by the
// resourceVersion, so nothing else changed: the essence stays and the
// object need not be converted again.
func (t *turn) refreshMetadata() {
	old, _ := t.raw["metadata"].(map[string]any)
	meta := make(map[string]any, len(old)+1)
	for key, v := range old {
		meta[key] = v
	}
	meta["resourceVersion"] = t.obj.GetResourceVersion()
	if finalizers := t.obj.GetFinalizers(); len(finalizers) > 0 {
		list := make([]any, len(finalizers))
		for i, f := range finalizers {
			list[i] = f
		}
		meta["finalizers"] = list
	} else {
		delete(meta, "finalizers")
	}
	t.raw["metadata"] = meta
}

// LoadState reads the stored state from every place gopf and Kopf may have
// kept it (see kopfFallback) and returns the error of state that cannot be
// read, which reportBadState reports; the sound state of another place is
// used instead (gopf's other place, or the state of the Kopf operator gopf
// takes over from), and with none the object is handled as new: running a
// handler again is safer than silently skipping one. The turn's write
// stores the state even when nothing else is written (one patch), which
// replaces the unreadable value and removes the copies in other places, so
// that a restart does not find it again.
//
// After a failed write that carried a handler's own patch, the turn is to
// send that write again, alone (see flush).
func (t *turn) loadState() error {
	loaded, err := state.LoadAll(t.store, t.raw)
	t.loaded, t.known = loaded, loaded
	t.unreadable = err != nil
	t.takeUnsaved()
	if t.known != nil {
		t.st = t.known.Clone()
	} else {
		t.st = &state.State{}
	}
	t.matchStoredForm()
	return err
}

// reportBadState reports state that cannot be read (a log line and a
// Warning Event, once per object and process).
func (t *turn) reportBadState(err error) {
	if err == nil || t.mem.Warned {
		return
	}
	t.mem.Warned = true
	what := "the object is handled as new"
	if t.loaded != nil {
		what = "the state found in another place is used"
	}
	msg := fmt.Sprintf("gopf ignores its stored state, which cannot be read (%v); %s, and this reconcile writes the state in %s, replacing the unreadable value", err, what, t.store.Where())
	t.log.Info("WARNING: "+msg, "where", t.store.Where())
	t.k.recorder.Eventf(t.obj, nil, corev1.EventTypeWarning, "BadStoredState", "Reconcile", "%s", msg)
}

// takeUnsaved takes into the turn what a failed write did not store, or
// a quiet retry did not (see quietRetry).
func (t *turn) takeUnsaved() {
	u := t.mem.Unsaved
	switch {
	case u == nil:
	case u.Patch != nil:
		// A write with a handler's own patch failed: the state
		// describes the patched object, so the patch goes out again
		// with it, before anything else (see flush).
		t.known, t.flushing, t.ownLanded = u.St, true, u.PatchLanded
		t.patch = *memory.ClonePatch(u.Patch)
		for id, r := range u.Results {
			t.keepResult(id, r)
		}
	case state.SameState(t.loaded, u.St):
		t.mem.Unsaved = nil // stored after all
	default:
		// A write failed: what gopf knows beats what is stored, so that
		// a handler that succeeded is not called again; its result is
		// written with the state.
		t.known = u.St
		for id, r := range u.Results {
			t.keepResult(id, r)
		}
	}
}
