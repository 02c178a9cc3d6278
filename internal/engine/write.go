package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// writeTimeout bounds the writes of one reconcile once the manager stops.
const writeTimeout = 10 * time.Second

// setFinalizer adds or removes gopf's finalizer with a write guarded by the
// object's resourceVersion, so other controllers' finalizers are never
// lost. Removing it from an object being deleted (its delete handlers are
// done) removes Kopf's too, in the same write. A conflict is returned, and
// the reconcile is retried. obj is the turn's object as the cache gave it:
// the finalizer is the turn's first write. An unstructured object, which
// holds every field the API server sent, is sent whole as an update, the
// API server's cheapest write (see patch.Sender.Replace); an object of a
// Go type, which may lack fields the server has, gets a merge patch of its
// finalizer list and resourceVersion, as does every object of a kind the
// operator may patch but not update (see patchFinalizer). Only the
// response's metadata is read back into obj.
func (k *KindController) setFinalizer(ctx context.Context, obj client.Object, on bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	finalizers := obj.GetFinalizers()
	if on {
		finalizers = append(finalizers[:len(finalizers):len(finalizers)], k.finalizer)
	} else {
		kept := make([]string, 0, len(finalizers))
		for _, f := range finalizers {
			if f != k.finalizer && !(f == k.opts.KopfFinalizer && obj.GetDeletionTimestamp() != nil) {
				kept = append(kept, f)
			}
		}
		finalizers = kept
	}
	u, whole := obj.(*unstructured.Unstructured)
	update := whole && !k.patchFinalizer.Load()
	var err error
	if update {
		err = k.replaceFinalizers(ctx, u, finalizers)
	}
	if !update || apierrors.IsForbidden(err) {
		forbidden := err
		// Never nil: an empty list is sent as [], not null.
		body := map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion()}}
		err = k.out.Send(ctx, obj, body, false, false)
		if forbidden != nil && err == nil && !k.patchFinalizer.Swap(true) {
			k.Log.Info("WARNING: the operator may patch this kind but not update it, so gopf patches its finalizer, which costs the API server more; grant update on the resource (see --print-rbac)",
				"kind", k.GVK.String(), "refused", forbidden.Error())
		}
	}
	if err != nil && !(apierrors.IsNotFound(err) && !on) {
		verb := map[bool]string{true: "adding", false: "removing"}[on]
		return fmt.Errorf("%s finalizer %s on %s %s/%s: %w", verb, k.finalizer, k.GVK.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// replaceFinalizers sends u with the finalizers given as an update, and
// takes the response's metadata into u. u itself changes only if the
// update lands.
func (k *KindController) replaceFinalizers(ctx context.Context, u *unstructured.Unstructured, finalizers []string) error {
	next := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	meta, _ := u.Object["metadata"].(map[string]any)
	next.Object["metadata"] = maps.Clone(meta)
	next.SetFinalizers(finalizers)
	next.SetGroupVersionKind(k.GVK) // an update's body names its kind
	if err := k.out.Replace(ctx, next); err != nil {
		return err
	}
	u.Object["metadata"] = next.Object["metadata"]
	return nil
}

// write sends what the turn changed: the results and the state (when they
// differ from what is stored) and the handlers' own patch, as at most one
// status patch and one object patch. The writes outlive a manager that is
// stopping (for up to writeTimeout), so that what handlers did is recorded;
// if they fail anyway, the state and results are kept in memory and written
// by the next reconcile instead of running the handlers again, and so is
// the handlers' own patch, which the kept state describes: that reconcile
// sends it all again before it does anything else (see flush).
func (t *turn) write(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	var own *spec.Patch // the handlers' own patch, before results and state join it
	if !t.patch.Empty() {
		own = memory.ClonePatch(&t.patch)
	}
	if own == nil && len(t.results) == 0 && !t.unreadable && t.onlyQuietRetries() {
		// Kept in memory and stored with the next write (see quietRetry).
		t.mem.Unsaved = &memory.Unsaved{St: t.st}
		return nil
	}
	err := t.send(ctx, own)
	switch {
	case err == nil:
		t.mem.Unsaved = nil
	case own != nil || t.st.Essence != "" || len(t.st.Progress) > 0:
		t.mem.Unsaved = &memory.Unsaved{St: t.st, Results: t.results, Patch: own, PatchLanded: t.ownLanded}
	}
	if t.writeTooLarge(err) {
		return nil // reported; retried when the object changes
	}
	return err
}

// send builds the write of the turn (see write) and sends it: the status
// patch and the object patch, the one that carries the state last. own is
// the handlers' own patch, nil if they patched nothing.
func (t *turn) send(ctx context.Context, own *spec.Patch) error {
	k := t.k
	t.mergeResults()
	showing := t.handledPatched()
	// Unreadable state is replaced even when the state did not change.
	changed := t.fitState()
	stateChanged := changed || t.unreadable
	if stateChanged {
		if err := t.store.Save(&t.patch, t.raw, t.st); err != nil {
			if errors.Is(err, state.ErrTooLarge) {
				k.recorder.Eventf(t.obj, nil, corev1.EventTypeWarning, "StateTooLarge", "Reconcile", "%v", err)
			}
			return fmt.Errorf("saving gopf's state on %s %s/%s: %w", k.GVK.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
		}
	}
	final, err := k.out.Transformed(t.raw, &t.patch)
	if err != nil {
		return err
	}
	objectPatch, statusPatch := k.out.Split(&t.patch)
	toStatus := len(statusPatch) > 0 || final != nil && k.hasStatus
	ownObject := own != nil && (len(spec.ObjectPatch(own)) > 0 || len(spec.Transforms(own)) > 0)
	if ownObject && toStatus && stateChanged && t.store.InStatus() {
		err = t.sendStateLast(ctx, statusPatch, objectPatch, final)
	} else {
		err = t.sendStatusFirst(ctx, statusPatch, objectPatch, final, stateChanged, toStatus)
	}
	if err != nil {
		return err
	}
	if changed || own != nil {
		// The next reconcile waits for the cache to show this write: the
		// state, and the object as the handlers' patch left it. Not for a
		// write that only replaces unreadable state, which the storage may
		// not be able to replace (Kopf's records it cannot parse stay):
		// a reconcile before the cache shows it decides the same and sends
		// the same patch again.
		t.mem.Wrote(t.st, showing)
	}
	return nil
}

// sendStatusFirst sends the status patch (if toStatus), then the object
// patch. The object patch carries the state when the state is not in
// status: a process that dies between the two leaves the handlers' results
// written and their calls unrecorded, so they run again (a call cut by the
// kill). When the state is in status, the object patch holds none of the
// handlers' changes here (see sendStateLast), only gopf's own (copies of
// the state elsewhere removed, the annotations of storageFallback).
func (t *turn) sendStatusFirst(ctx context.Context, statusPatch, objectPatch, final map[string]any, stateChanged, toStatus bool) error {
	var err error
	if toStatus {
		if objectPatch, final, err = t.sendStatus(ctx, statusPatch, objectPatch, final, stateChanged); err != nil {
			return err
		}
	}
	if len(objectPatch) > 0 || final != nil {
		return t.k.out.SendPart(ctx, t.obj, t.raw, final, objectPatch, false, false)
	}
	return nil
}

// sendStateLast sends the object patch (the handlers' own changes), then
// the status patch that carries the state, for the same reason as
// sendStatusFirst: the state, which records the calls as done, is written
// last. The other order lost the handlers' patch to a process that died
// after the state landed and before the object patch did (or while it was
// being retried): the next process found the calls done and took the
// missing change for a change of the object. If the status turns out not
// to keep the state (storageFallback), the annotations that store it
// follow in a third write. An object patch that landed is not sent again
// when only the status write failed (ownLanded, kept in Unsaved): what it
// set is on the object, and the state records the object as it set it.
func (t *turn) sendStateLast(ctx context.Context, statusPatch, objectPatch, final map[string]any) error {
	if !t.ownLanded {
		if err := t.k.out.SendPart(ctx, t.obj, t.raw, final, objectPatch, false, false); err != nil {
			return err
		}
		t.ownLanded = true
	}
	fallback, _, err := t.sendStatus(ctx, statusPatch, nil, final, true)
	if err != nil || len(fallback) == 0 {
		return err
	}
	return t.k.out.Send(ctx, t.obj, fallback, false, false)
}

// mergeResults adds to the patch the handlers' results that differ from
// status as it is, where status keeps them.
func (t *turn) mergeResults() {
	status, _ := t.raw["status"].(map[string]any)
	for id, result := range t.results {
		if state.Changes(status[id], result) && t.k.keepsResult(t, id) {
			spec.MergeStatus(&t.patch, id, result)
		}
	}
}

// handledPatched makes what the turn records as handled on its essence
// (the state's essence, and the records of the handlers that finished on
// it) the object as the handlers' own patch leaves it: or the next
// reconcile would take their own change for a change of the object. It
// returns the essence the object shows after the write when the state
// records it as handled (also when a failed write is sent again: see
// flush), or "".
func (t *turn) handledPatched() string {
	patched := t.essence
	if obj := spec.ObjectPatch(&t.patch); len(obj) > 0 || len(spec.Transforms(&t.patch)) > 0 {
		k := t.k
		after := state.ApplyMergePatch(state.DeepCopyJSON(t.raw).(map[string]any), obj)
		if transformed, err := k.out.Transformed(t.raw, &t.patch); err == nil && transformed != nil {
			after = transformed
		}
		if data, err := state.Marshal(state.Essence(after, k.opts.Prefix, k.extra)); err == nil {
			patched = string(data)
		}
	}
	for _, rec := range t.st.Progress {
		if rec.Handled == t.essence {
			rec.Handled = patched
		}
	}
	if t.st.Essence == t.essence {
		t.st.Essence = patched
	}
	if t.st.Essence != patched {
		return "" // an older essence: the cache need not show it (createHandled)
	}
	return patched
}

// sendStatus sends the status patch. When it stores the state in status,
// it checks that status kept it (storageFallback) and returns the object
// patch and final form with the annotations that store the state if not.
func (t *turn) sendStatus(ctx context.Context, statusPatch, objectPatch, final map[string]any, stateChanged bool) (map[string]any, map[string]any, error) {
	k := t.k
	// The response is read whole only while it may show that the API
	// server drops gopf's state from status (storageFallback).
	inStatus := t.store.InStatus()
	whole := stateChanged && inStatus && !k.statusKept.Load()
	if err := k.out.SendPart(ctx, t.obj, t.raw, final, map[string]any{"status": statusPatch}, true, whole); err != nil {
		if !t.statusLanded(ctx, err, statusPatch, final) {
			return nil, nil, err
		}
		t.log.V(1).Info("the status write's answer was lost, but the write landed; writing the rest", "error", err.Error())
	}
	if !stateChanged {
		return objectPatch, final, nil
	}
	fallback, err := t.storageFallback()
	if err != nil {
		return nil, nil, err
	}
	objectPatch = state.MergeInto(objectPatch, fallback)
	if final != nil && len(fallback) > 0 {
		final = state.ApplyMergePatch(final, fallback)
	}
	return objectPatch, final, nil
}

// readBackTimeout bounds statusLanded's read of the object.
const readBackTimeout = 2 * time.Second

// statusLanded reports whether a status write that failed with err landed
// all the same, as a write whose answer was lost on its way back does: it
// reads the object from the API server (into t.obj) and compares its
// status with what the write set (statusPatch, or the status of final).
// The state that follows the status in the object patch would otherwise
// wait in memory for the next reconcile, and be lost with a process that
// stops first: its handlers would run again, though their results landed.
// A definite refusal (conflict, invalid, forbidden, too many requests)
// did not land.
func (t *turn) statusLanded(ctx context.Context, err error, statusPatch, final map[string]any) bool {
	var st apierrors.APIStatus
	if t.k.live == nil || errors.As(err, &st) && st.Status().Code > 0 && st.Status().Code < 500 {
		return false
	}
	want := statusPatch
	if final != nil {
		want, _ = final["status"].(map[string]any)
	}
	uid := t.obj.GetUID()
	// Briefly: when the API server cannot be reached, client-go retries a
	// read for up to ten seconds, and the state can as well wait in memory.
	ctx, cancel := context.WithTimeout(ctx, readBackTimeout)
	defer cancel()
	if err := t.k.live.Get(ctx, client.ObjectKeyFromObject(t.obj), t.obj); err != nil || t.obj.GetUID() != uid {
		return false
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return false
	}
	status, _ := raw["status"].(map[string]any)
	for key, value := range want {
		if state.Changes(status[key], value) {
			return false
		}
	}
	return true
}

// flush sends again, alone, a write that failed with a handler's own
// patch in it (see loadState): the state, the results and that patch, on
// the object as it is now. The reconcile ends there; the object is handled
// again once the cache shows the write.
func (t *turn) flush(ctx context.Context) (reconcile.Result, error) {
	t.log.V(1).Info("sending again the write that failed, with the handlers' own patch")
	if err := t.write(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: time.Millisecond}, nil
}

// keepsResult reports whether status keeps handler id's results; where it
// does not (a typed status, a built-in kind), the result is not sent, and
// the first such result of each handler is reported with a warning naming
// the field to declare.
func (k *KindController) keepsResult(t *turn, id string) bool {
	why := k.place.ResultDrops(id)
	if why == "" {
		return true
	}
	if k.place.FirstDrop(id) {
		t.log.Info("WARNING: the results of this handler cannot be stored, so gopf does not write them; declare status."+id+" in the kind's schema and Go type to keep them",
			"handler", id, "field", "status."+id, "reason", why)
	}
	return false
}

// storageFallback is the safety net for a kind whose status was found to
// keep gopf's state when the controller was set up (chooseStorage) but no
// longer does (its CRD changed since): after a status write that should
// have stored the state in status, it checks the response (t.obj), until a
// response of the kind shows the state kept; if the state is not there,
// the kind keeps its state in annotations from now on (and at the next
// start, which reads the CRD again), with one warning for the kind, and it
// returns the annotation patch that stores this state. Otherwise it
// returns nil.
func (t *turn) storageFallback() (map[string]any, error) {
	k := t.k
	if !t.store.InStatus() || k.statusKept.Load() {
		return nil, nil
	}
	resp, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return nil, nil
	}
	if state.Saved(t.store, resp, t.st) || state.HasStatusField(resp, k.opts.StatusField) {
		k.statusKept.Store(true)
		return nil, nil
	}
	fallback := kopfstate.Fallback{Storage: state.AnnotationStorage{Prefix: k.opts.Prefix}, Other: state.StatusStorage{Field: k.opts.StatusField}, Kopf: k.kopf}
	if !k.fellBack.Swap(true) {
		who := "the API server's schema dropped it"
		if !state.TypeKeeps(k.NewObject, []string{"status", k.opts.StatusField}, state.SampleState()) {
			who = fmt.Sprintf("the Go type %T dropped it", k.NewObject())
		}
		t.log.Info("WARNING: gopf's state did not stay in status ("+who+"); keeping the state of this kind in annotations from now on",
			"field", "status."+k.opts.StatusField)
	}
	k.setStorage(fallback)
	t.store = fallback
	var p spec.Patch
	if err := fallback.Save(&p, resp, t.st); err != nil {
		return nil, err
	}
	return spec.ObjectPatch(&p), nil
}

// SendPatch sends a handler patch: at most one status and one object patch.
func (k *KindController) SendPatch(ctx context.Context, obj client.Object, p *spec.Patch) error {
	return k.out.SendPatch(ctx, obj, p)
}
