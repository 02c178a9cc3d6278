package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/state"
)

// Refresh re-reads the object's JSON form and essence after obj changed.
func (t *Turn) Refresh() error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.Obj)
	if err != nil {
		return fmt.Errorf("converting %s %s/%s: %w", t.K.GVK.Kind, t.Obj.GetNamespace(), t.Obj.GetName(), err)
	}
	t.Raw = raw
	e := state.Essence(raw, t.K.Opts.Prefix, t.K.Extra)
	data, err := state.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding the essence of %s %s/%s: %w", t.K.GVK.Kind, t.Obj.GetNamespace(), t.Obj.GetName(), err)
	}
	t.Essence = string(data)
	// Handlers see the essence as decoded JSON, as the stored one they
	// are compared with reads.
	if tree, ok := state.AsDecodedJSON(e); ok {
		t.essenceTree = tree
	} else {
		t.essenceTree = state.DecodeJSON(t.Essence)
	}
	return nil
}

// refreshMetadata takes into t.raw what gopf's own finalizer patch changed
// in obj: its finalizers and resourceVersion. That patch is guarded by the
// resourceVersion, so nothing else changed: the essence stays and the
// object need not be converted again.
func (t *Turn) refreshMetadata() {
	old, _ := t.Raw["metadata"].(map[string]any)
	meta := make(map[string]any, len(old)+1)
	for key, v := range old {
		meta[key] = v
	}
	meta["resourceVersion"] = t.Obj.GetResourceVersion()
	if finalizers := t.Obj.GetFinalizers(); len(finalizers) > 0 {
		list := make([]any, len(finalizers))
		for i, f := range finalizers {
			list[i] = f
		}
		meta["finalizers"] = list
	} else {
		delete(meta, "finalizers")
	}
	t.Raw["metadata"] = meta
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
func (t *Turn) LoadState() error {
	loaded, err := state.LoadAll(t.Store, t.Raw)
	t.Loaded, t.Known = loaded, loaded
	t.unreadable = err != nil
	t.takeUnsaved()
	if t.Known != nil {
		t.St = t.Known.Clone()
	} else {
		t.St = &state.State{}
	}
	t.matchStoredForm()
	return err
}

// reportBadState reports state that cannot be read (a log line and a
// Warning Event, once per object and process).
func (t *Turn) reportBadState(err error) {
	if err == nil || t.Mem.Warned {
		return
	}
	t.Mem.Warned = true
	what := "the object is handled as new"
	if t.Loaded != nil {
		what = "the state found in another place is used"
	}
	msg := fmt.Sprintf("gopf ignores its stored state, which cannot be read (%v); %s, and this reconcile writes the state in %s, replacing the unreadable value", err, what, t.Store.Where())
	t.log.Info("WARNING: "+msg, "where", t.Store.Where())
	t.K.recorder.Eventf(t.Obj, nil, corev1.EventTypeWarning, "BadStoredState", "Reconcile", "%s", msg)
}

// takeUnsaved takes into the turn what a failed write did not store, or
// a quiet retry did not (see quietRetry).
func (t *Turn) takeUnsaved() {
	u := t.Mem.Unsaved
	switch {
	case u == nil:
	case u.Patch != nil:
		// A write with a handler's own patch failed: the state
		// describes the patched object, so the patch goes out again
		// with it, before anything else (see flush).
		t.Known, t.flushing = u.St, true
		t.patch = *memory.ClonePatch(u.Patch)
		for id, r := range u.Results {
			t.keepResult(id, r)
		}
	case state.SameState(t.Loaded, u.St):
		t.Mem.Unsaved = nil // stored after all
	default:
		// A write failed: what gopf knows beats what is stored, so that
		// a handler that succeeded is not called again; its result is
		// written with the state.
		t.Known = u.St
		for id, r := range u.Results {
			t.keepResult(id, r)
		}
	}
}
