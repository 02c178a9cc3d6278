package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// writeTimeout bounds the writes of one reconcile once the manager stops.
const writeTimeout = 10 * time.Second

// maxEventMessage is the longest Event message the API server accepts.
const maxEventMessage = 1024

// hasStatusField reports whether obj has status.<field> at all.
func hasStatusField(obj map[string]any, field string) bool {
	status, _ := obj["status"].(map[string]any)
	_, ok := status[field]
	return ok
}

// errStateTooLarge marks state that cannot be stored because of its size.
var errStateTooLarge = errors.New("gopf's state does not fit on the object")

// kindController is the Reconciler of one watched kind.
type kindController struct {
	name      string
	gvk       schema.GroupVersionKind
	opts      Options
	change    []*contract.Handler // change handlers, in registration order
	level     []*contract.Handler // OnReconcile handlers
	spawned   []*contract.Handler // timers and daemons
	events    []*contract.Handler // OnEvent handlers
	indexes   []*contract.Handler // OnIndex functions
	cache     cache.Cache
	spawner   *spawner // nil without timers and daemons
	shared    *shared
	scheme    *runtime.Scheme
	wake      chan event.GenericEvent // objects to reconcile again
	log       logr.Logger
	extra     [][]string    // field paths kept in the essence
	reader    client.Reader // the manager's cache
	writer    client.Client
	recorder  recorder.EventRecorder
	newObject func() client.Object
	hasStatus bool
	finalizer string
	memory    *memories
	mu        sync.Mutex
	store     storage // switched to annotations if status stops keeping the state (storageFallback)
	kopf      *kopfStore
	place     *statusPlace // what the kind's status keeps
	// statusKept is set once a response showed the state in status: the
	// kind's schema keeps it, and later responses need no check.
	statusKept atomic.Bool
	// fellBack is set once storageFallback moved the kind to annotations.
	fellBack atomic.Bool
}

var _ reconcile.Reconciler = (*kindController)(nil)

// Reconcile handles one object: it derives the cause from the stored state,
// runs the matching handlers and writes their results and the new state.
func (k *kindController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	k.shared.busy.Add(1) // before the gate check, so that a pause can wait for it
	defer k.shared.busy.Add(-1)
	if !k.shared.gate.admit() || !k.shared.scope.includes(req.Namespace) {
		return reconcile.Result{}, nil // paused, starting, or out of scope; reopening the gate reconciles everything
	}
	obj := k.newObject()
	if err := k.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			k.memory.forget(req.NamespacedName)
			if k.spawner != nil {
				k.spawner.forget(req.NamespacedName)
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s %s from the cache: %w", k.gvk.Kind, req.NamespacedName, err)
	}
	if !k.shared.indexesReady() {
		log.V(1).Info("waiting for the indexes to see their initial lists")
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	mem := k.memory.get(req.NamespacedName, obj.GetUID())
	t := &turn{k: k, log: log, obj: obj, now: time.Now(), store: k.storage(), mem: mem}
	if err := t.refresh(); err != nil {
		return reconcile.Result{}, err
	}

	// Wait (without blocking the worker) for the cache to show our own last
	// write, so that one change is never handled twice.
	if wait := t.mem.consistencyWait(t.store, t.raw, t.essence, k.opts.ConsistencyTimeout); wait > 0 {
		log.V(1).Info("waiting for the cache to catch up with gopf's last write", "wait", wait)
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// 1. Select the handlers whose filters accept the object.
	change, level, spawn := k.selected(k.change, obj, t.raw), k.selected(k.level, obj, t.raw), k.selected(k.spawned, obj, t.raw)
	deleting := obj.GetDeletionTimestamp() != nil
	hasFinalizer := k.holds(obj)
	if len(change) == 0 && len(level) == 0 && len(spawn) == 0 && !hasFinalizer {
		if k.spawner != nil {
			k.spawner.sync(req.NamespacedName, obj, t.essence, nil)
		}
		return reconcile.Result{}, nil // not ours: no state, no finalizer, no noise
	}
	t.loadState(ctx)
	if t.flushing {
		return t.flush(ctx)
	}

	var cause handlers.Reason
	switch {
	case deleting && hasFinalizer && t.mem.released:
		// The cache has not yet shown the release: the delete handlers
		// are done, the finalizer is gone.
		log.V(1).Info("waiting for the cache to show the finalizer's removal")
		return reconcile.Result{}, nil
	case deleting && hasFinalizer:
		// 3. and 4. for a deletion: the delete handlers, then the finalizer goes.
		cause = handlers.ReasonDelete
		if released, err := t.handleDeletion(ctx, change); released || err != nil {
			return reconcile.Result{}, err
		}
	case deleting:
		// Someone else's finalizer holds the object; nothing of ours to do.
		if k.spawner != nil {
			k.spawner.stop(req.NamespacedName)
		}
	default:
		// 2. The finalizer comes before any handler can cause side effects,
		// and goes when nothing needs it.
		if want := k.wantsFinalizer(req.NamespacedName, change, spawn); k.finalizerOutOfDate(obj, want) {
			if err := k.setFinalizer(ctx, obj, want); err != nil {
				return reconcile.Result{}, err
			}
			t.refreshMetadata()
		}
		// 3. and 4. The cause, and its handlers; timers and daemons follow
		// the selection.
		cause = t.changeCause(ctx, change)
		if k.spawner != nil {
			k.spawner.sync(req.NamespacedName, obj, t.essence, spawn)
		}
	}

	// 4. The level handlers, then one write of results and state.
	res, levelErr := t.runLevel(ctx, level, cause)
	if err := t.write(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if t.requeue > 0 && (res.RequeueAfter == 0 || t.requeue < res.RequeueAfter) {
		res.RequeueAfter = t.requeue
	}
	return res, levelErr
}

// wantsFinalizer is gopf's finalizer policy for a live object: it holds
// the object while a selected delete handler is not optional, or while a
// selected timer or daemon has not finished for good.
func (k *kindController) wantsFinalizer(key types.NamespacedName, change, spawn []*contract.Handler) bool {
	for _, r := range change {
		if r.Kind == spec.KindDelete && !r.Options.Optional {
			return true
		}
	}
	return len(spawn) > 0 && k.spawner.needsFinalizer(key, spawn)
}

// handleDeletion runs the delete handlers of an object gopf's finalizer
// holds, and releases the finalizer once they are done and the object's
// daemons are gone. It reports whether the finalizer was released.
func (t *turn) handleDeletion(ctx context.Context, change []*contract.Handler) (bool, error) {
	k, key := t.k, client.ObjectKeyFromObject(t.obj)
	done := t.deleteCause(ctx, change)
	gone := k.spawner == nil || k.spawner.stop(key)
	switch {
	case done && gone:
		if err := k.setFinalizer(ctx, t.obj, false); err != nil {
			// Remember that the delete handlers are done, so that the
			// retry removes the finalizer without calling them again.
			t.mem.unsaved = &unsaved{st: t.st, results: t.results}
			return false, err
		}
		t.mem.released = true
		causes.WithLabelValues(k.name, string(handlers.ReasonDelete)).Inc()
		t.log.Info("deletion handled; finalizer removed")
		return true, nil
	case done:
		t.log.V(1).Info("waiting for daemons to stop before releasing the finalizer")
	}
	return false, nil
}

// refresh re-reads the object's JSON form and essence after obj changed.
func (t *turn) refresh() error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return fmt.Errorf("converting %s %s/%s: %w", t.k.gvk.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
	}
	t.raw = raw
	e := essence(raw, t.k.opts.Prefix, t.k.extra)
	data, err := jsonMarshal(e)
	if err != nil {
		return fmt.Errorf("encoding the essence of %s %s/%s: %w", t.k.gvk.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
	}
	t.essence = string(data)
	// Handlers see the essence as decoded JSON, as the stored one they
	// are compared with reads.
	if tree, ok := asDecodedJSON(e); ok {
		t.essenceTree = tree
	} else {
		t.essenceTree = decodeJSON(t.essence)
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

// loadState reads the stored state from every place gopf and Kopf may have
// kept it (see kopfFallback). State that cannot be read is reported (a log
// line and a Warning Event, once per object and process); the sound state
// of another place is used instead (gopf's other place, or the state of the
// Kopf operator gopf takes over from), and with none the object is handled
// as new: running a handler again is safer than silently skipping one.
// The next write of the state replaces the unreadable one.
//
// After a failed write that carried a handler's own patch, the turn is to
// send that write again, alone (see flush).
func (t *turn) loadState(ctx context.Context) {
	var loaded *state
	var err error
	if layered, ok := t.store.(kopfFallback); ok {
		loaded, err = layered.loadAll(t.raw)
	} else if loaded, err = t.store.load(t.raw); err != nil {
		loaded = nil
	}
	if err != nil && !t.mem.warned {
		t.mem.warned = true
		what := "the object is handled as new"
		if loaded != nil {
			what = "the state found in another place is used"
		}
		msg := fmt.Sprintf("gopf ignores its stored state, which cannot be read (%v); %s and the state will be rewritten", err, what)
		t.log.Info("WARNING: "+msg, "where", t.store.where())
		t.k.recorder.Eventf(t.obj, nil, corev1.EventTypeWarning, "BadStoredState", "Reconcile", "%s", spec.Truncate(msg, maxEventMessage))
	}
	t.loaded, t.known = loaded, loaded
	if u := t.mem.unsaved; u != nil {
		switch {
		case u.patch != nil:
			// A write with a handler's own patch failed: the state
			// describes the patched object, so the patch goes out again
			// with it, before anything else (see flush).
			t.known, t.flushing = u.st, true
			t.patch = *clonePatch(u.patch)
			for id, r := range u.results {
				t.keepResult(id, r)
			}
		case sameState(loaded, u.st):
			t.mem.unsaved = nil // stored after all
		default:
			// A write failed: what gopf knows beats what is stored, so that
			// a handler that succeeded is not called again; its result is
			// written with the state.
			t.known = u.st
			for id, r := range u.results {
				t.keepResult(id, r)
			}
		}
	}
	if t.known != nil {
		t.st = t.known.clone()
	} else {
		t.st = &state{}
	}
	t.matchStoredForm()
}

// baseCall builds the Cause (and its extras) that every handler kind of
// objects gets: the object's identity, memo, indexes, client and Events.
func (k *kindController) baseCall(r *contract.Handler, obj client.Object, log logr.Logger) (*handlers.Cause, *contract.Extras) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	c := &handlers.Cause{
		HandlerID:   r.Options.ID,
		Name:        obj.GetName(),
		Namespace:   obj.GetNamespace(),
		UID:         obj.GetUID(),
		Labels:      nonNil(obj.GetLabels()),
		Annotations: nonNil(obj.GetAnnotations()),
		Memo:        (*handlers.Memo)(&k.memory.get(key, obj.GetUID()).memo),
		Param:       r.Options.Param,
		Indexes:     (*handlers.Indexes)(k.shared.indexes),
		Client:      k.writer,
	}
	x := &contract.Extras{Post: func(eventType, reason, message string) {
		// The API server rejects Events with longer messages.
		k.recorder.Eventf(obj, nil, eventType, reason, "Handling", "%s", spec.Truncate(message, maxEventMessage))
	}, PostAbout: func(other client.Object, eventType, reason, message string) {
		k.recorder.Eventf(other, obj, eventType, reason, "Handling", "%s", spec.Truncate(message, maxEventMessage))
	}}
	k.shared.set.BindCause(c, x)
	c.Log = k.bridgeLogs(log, x)
	return c, x
}

// selected returns the registrations whose filters accept obj; raw is obj
// as a JSON-like map. When all do, it returns regs itself: callers only
// read the result.
func (k *kindController) selected(regs []*contract.Handler, obj client.Object, raw map[string]any) []*contract.Handler {
	for i, r := range regs {
		if k.selects(r, obj, raw) {
			continue
		}
		out := append(make([]*contract.Handler, 0, len(regs)-1), regs[:i]...)
		for _, r := range regs[i+1:] {
			if k.selects(r, obj, raw) {
				out = append(out, r)
			}
		}
		return out
	}
	return regs
}

// selects applies a handler's filters to obj in the handler's Go type. raw
// is obj as a JSON-like map, or nil to have it converted when needed.
func (k *kindController) selects(r *contract.Handler, obj client.Object, raw map[string]any) bool {
	var indexes *spec.Indexes
	if k.shared != nil { // the planner has no indexes: filters see none
		indexes = k.shared.indexes
	}
	if r.Options.When == nil {
		return selects(r, obj, raw, indexes)
	}
	typed, err := k.objectFor(r, obj)
	return err == nil && selects(r, typed, raw, indexes)
}

// holds reports whether obj carries gopf's finalizer or that of the Kopf
// operator gopf takes over from, which gopf answers for as for its own.
func (k *kindController) holds(obj client.Object) bool {
	return controllerutil.ContainsFinalizer(obj, k.finalizer) || controllerutil.ContainsFinalizer(obj, k.opts.KopfFinalizer)
}

// finalizerOutOfDate reports whether a live object's finalizers disagree
// with want: gopf adds its own where neither it nor Kopf's is, and removes
// its own when nothing needs it. Kopf's goes only with a deletion.
func (k *kindController) finalizerOutOfDate(obj client.Object, want bool) bool {
	if want {
		return !k.holds(obj)
	}
	return controllerutil.ContainsFinalizer(obj, k.finalizer)
}

// setFinalizer adds or removes gopf's finalizer with a merge patch guarded by
// the object's resourceVersion, so other controllers' finalizers are never
// lost. Removing it from an object being deleted (its delete handlers are
// done) removes Kopf's too, in the same patch. A conflict is returned, and
// the reconcile is retried. The patch is built directly (the finalizer list
// and the resourceVersion) and only the response's metadata is read back
// into obj.
func (k *kindController) setFinalizer(ctx context.Context, obj client.Object, on bool) error {
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
	// Never nil: an empty list is sent as [], not null.
	body := map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion()}}
	err := k.sendAs(ctx, obj, types.MergePatchType, body, false, false)
	if err != nil && !(apierrors.IsNotFound(err) && !on) {
		return fmt.Errorf("%s finalizer %s on %s %s/%s: %w", map[bool]string{true: "adding", false: "removing"}[on], k.finalizer, k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
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
func (t *turn) write(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	defer func() {
		if t.writeTooLarge(err) {
			err = nil // reported; retried when the object changes
		}
	}()
	var own *spec.Patch // the handlers' own patch, before results and state join it
	if !t.patch.Empty() {
		own = clonePatch(&t.patch)
	}
	defer func() {
		switch {
		case err != nil && (own != nil || t.st.Essence != "" || len(t.st.Progress) > 0):
			t.mem.unsaved = &unsaved{st: t.st, results: t.results, patch: own}
		case err == nil:
			t.mem.unsaved = nil
		}
	}()
	k := t.k
	for id, result := range t.results {
		status, _ := t.raw["status"].(map[string]any)
		if changes(status[id], result) && k.keepsResult(t, id) {
			spec.MergeStatus(&t.patch, id, result)
		}
	}
	if obj := spec.ObjectPatch(&t.patch); (len(obj) > 0 || len(spec.Transforms(&t.patch)) > 0) && t.st.Essence != "" && t.st.Essence == t.essence {
		// The handlers' own patch changes the object: what they handled is
		// the patched object, or the next reconcile would take their own
		// change for an update.
		patched := applyMergePatch(deepCopyJSON(t.raw).(map[string]any), obj)
		if transformed, err := k.transformed(t.raw, &t.patch); err == nil && transformed != nil {
			patched = transformed
		}
		if data, err := jsonMarshal(essence(patched, k.opts.Prefix, k.extra)); err == nil {
			t.st.Essence = string(data)
		}
	}
	stateChanged := t.fitState()
	if stateChanged {
		if err := t.store.save(&t.patch, t.raw, t.st); err != nil {
			if errors.Is(err, errStateTooLarge) {
				k.recorder.Eventf(t.obj, nil, corev1.EventTypeWarning, "StateTooLarge", "Reconcile", "%v", err)
			}
			return fmt.Errorf("saving gopf's state on %s %s/%s: %w", k.gvk.Kind, t.obj.GetNamespace(), t.obj.GetName(), err)
		}
	}
	final, err := k.transformed(t.raw, &t.patch)
	if err != nil {
		return err
	}
	objectPatch, statusPatch := k.split(&t.patch)
	if len(statusPatch) > 0 || final != nil && k.hasStatus {
		// The response is read whole only while it may show that the API
		// server drops gopf's state from status (storageFallback).
		_, inStatus := baseStorage(t.store).(statusStorage)
		whole := stateChanged && inStatus && !k.statusKept.Load()
		if err := k.sendPart(ctx, t.obj, t.raw, final, map[string]any{"status": statusPatch}, true, whole); err != nil {
			return err
		}
		if stateChanged {
			fallback, err := t.storageFallback()
			if err != nil {
				return err
			}
			objectPatch = mergeInto(objectPatch, fallback)
			if final != nil && len(fallback) > 0 {
				final = applyMergePatch(final, fallback)
			}
		}
	}
	if len(objectPatch) > 0 || final != nil {
		if err := k.sendPart(ctx, t.obj, t.raw, final, objectPatch, false, false); err != nil {
			return err
		}
	}
	if stateChanged || own != nil {
		// The next reconcile waits for the cache to show this write: the
		// state, and the object as the handlers' patch left it.
		t.mem.wrote(t.st)
	}
	return nil
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
func (k *kindController) keepsResult(t *turn, id string) bool {
	why := k.place.resultDrops(id)
	if why == "" {
		return true
	}
	if k.place.firstDrop(id) {
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
	if _, inStatus := baseStorage(t.store).(statusStorage); !inStatus || k.statusKept.Load() {
		return nil, nil
	}
	resp, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return nil, nil
	}
	if saved(t.store, resp, t.st) || hasStatusField(resp, k.opts.StatusField) {
		k.statusKept.Store(true)
		return nil, nil
	}
	fallback := kopfFallback{storage: annotationStorage{prefix: k.opts.Prefix}, other: statusStorage{field: k.opts.StatusField}, kopf: k.kopf}
	if !k.fellBack.Swap(true) {
		who := "the API server's schema dropped it"
		if !typeKeeps(k.newObject, []string{"status", k.opts.StatusField}, sampleState()) {
			who = fmt.Sprintf("the Go type %T dropped it", k.newObject())
		}
		t.log.Info("WARNING: gopf's state did not stay in status ("+who+"); keeping the state of this kind in annotations from now on",
			"field", "status."+k.opts.StatusField)
	}
	k.setStorage(fallback)
	t.store = fallback
	var p spec.Patch
	if err := fallback.save(&p, resp, t.st); err != nil {
		return nil, err
	}
	return spec.ObjectPatch(&p), nil
}

// split returns the object patch and the status patch to send for p; status
// goes into the object patch for kinds without a status subresource.
func (k *kindController) split(p *spec.Patch) (objectPatch, statusPatch map[string]any) {
	objectPatch, statusPatch = spec.ObjectPatch(p), spec.StatusPatch(p)
	if len(statusPatch) > 0 && !k.hasStatus {
		objectPatch = mergeInto(objectPatch, map[string]any{"status": statusPatch})
		statusPatch = nil
	}
	return objectPatch, statusPatch
}

// sendPatch sends a handler patch: at most one status and one object patch.
func (k *kindController) sendPatch(ctx context.Context, obj client.Object, p *spec.Patch) error {
	var raw, final map[string]any
	if len(spec.Transforms(p)) > 0 {
		var err error
		if raw, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return err
		}
		if final, err = k.transformed(raw, p); err != nil {
			return err
		}
	}
	objectPatch, statusPatch := k.split(p)
	if len(statusPatch) > 0 || final != nil && k.hasStatus {
		if err := k.sendPart(ctx, obj, raw, final, map[string]any{"status": statusPatch}, true, false); err != nil {
			return err
		}
	}
	if len(objectPatch) > 0 || final != nil {
		return k.sendPart(ctx, obj, raw, final, objectPatch, false, false)
	}
	return nil
}

// statusOf returns the status of obj as a JSON-like map.
func statusOf(obj client.Object) (map[string]any, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	status, _ := raw["status"].(map[string]any)
	return status, nil
}

// call runs one handler that has a Call (a change handler, sub-handler,
// timer, event or index handler) on a private copy of obj in the handler's
// Go type (sub-handlers get none: they act through their parent's Cause),
// turning a panic into an error and the result into plain JSON values.
func (k *kindController) call(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause) (any, error) {
	var out any
	err := k.invoke(ctx, h, obj, c, func(ctx context.Context, arg client.Object) (err error) {
		out, err = h.Call(ctx, arg, c)
		return err
	})
	if err != nil || out == nil {
		return nil, err
	}
	v, err := toJSONValue(out)
	if err != nil {
		return nil, handlers.Permanent(fmt.Errorf("handler %q returned a result that cannot be stored as JSON: %w", c.HandlerID, err))
	}
	return v, nil
}

// callLevel runs one level handler, as call does.
func (k *kindController) callLevel(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause) (res reconcile.Result, err error) {
	err = k.invoke(ctx, h, obj, c, func(ctx context.Context, arg client.Object) (err error) {
		res, err = h.Reconcile(ctx, arg, c)
		return err
	})
	return res, err
}

// invoke runs fn with obj in h's Go type and c's logger in the context,
// recovering a panic, and names the handler and object in an error.
func (k *kindController) invoke(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause, fn func(ctx context.Context, arg client.Object) error) error {
	var arg client.Object
	if h.NewObject != nil {
		var err error
		if arg, err = k.objectFor(h, obj); err != nil {
			return err
		}
	}
	err := spec.Protect(c.Log, func() error { return fn(logf.IntoContext(ctx, c.Log), arg) })
	if p := (*spec.PanicError)(nil); errors.As(err, &p) {
		return fmt.Errorf("handler %q panicked on %s %s/%s: %w", c.HandlerID, k.gvk.Kind, c.Namespace, c.Name, p)
	}
	if err != nil {
		return fmt.Errorf("handler %q on %s %s/%s: %w", c.HandlerID, k.gvk.Kind, c.Namespace, c.Name, err)
	}
	return nil
}

// failedForGood reports a handler's permanent failure on the object as a
// Warning Event: it is rare and final, so it is worth saying on the object.
func (k *kindController) failedForGood(obj client.Object, id string, err error) {
	k.recorder.Eventf(obj, nil, "Warning", "HandlerFailed", "Handling", "handler %q failed permanently: %s", id, spec.Truncate(err.Error(), 900))
}

// objectFor gives a handler its own copy of obj, in the Go type it declared.
func (k *kindController) objectFor(r *contract.Handler, obj client.Object) (client.Object, error) {
	want := r.NewObject()
	if reflect.TypeOf(want) == reflect.TypeOf(obj) {
		out := obj.DeepCopyObject().(client.Object)
		out.GetObjectKind().SetGroupVersionKind(k.gvk) // handlers see apiVersion and kind, e.g. for Adopt
		return out, nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if u, ok := want.(*unstructured.Unstructured); ok {
		u.SetUnstructuredContent(raw)
		u.SetGroupVersionKind(k.gvk)
		return u, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, want); err != nil {
		return nil, fmt.Errorf("converting %s for %s: %w", k.gvk.Kind, r, err)
	}
	want.GetObjectKind().SetGroupVersionKind(k.gvk)
	return want, nil
}

// send applies one JSON merge patch, to the status subresource or the main
// resource; see sendAs for whole.
func (k *kindController) send(ctx context.Context, obj client.Object, body map[string]any, status, whole bool) error {
	return k.sendAs(ctx, obj, types.MergePatchType, body, status, whole)
}

// sendAs sends body as a patch of type pt to the object or its status. With
// whole, obj is replaced by the response; otherwise only the response's
// metadata is requested (the API server's PartialObjectMetadata form, far
// cheaper to decode than the object) and copied into obj, which is what
// gopf reads after a write.
func (k *kindController) sendAs(ctx context.Context, obj client.Object, pt types.PatchType, body any, status, whole bool) error {
	data, err := jsonMarshal(body)
	if err != nil {
		return fmt.Errorf("encoding the patch for %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	p := client.RawPatch(pt, data)
	target := obj
	var meta *metav1.PartialObjectMetadata
	if !whole {
		meta = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()}}
		meta.SetGroupVersionKind(k.gvk)
		target = meta
	}
	if status {
		err = k.writer.Status().Patch(ctx, target, p)
	} else {
		err = k.writer.Patch(ctx, target, p)
	}
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if meta != nil {
		copyMetadata(obj, &meta.ObjectMeta)
	}
	return nil
}

// copyMetadata sets what a patch's response says of obj's metadata.
func copyMetadata(obj client.Object, from *metav1.ObjectMeta) {
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			kept := m.ManagedFields // the cache's choice, not the response's
			*m = *from
			m.ManagedFields = kept
			return
		}
	}
	obj.SetResourceVersion(from.ResourceVersion)
	obj.SetGeneration(from.Generation)
	obj.SetFinalizers(from.Finalizers)
	obj.SetLabels(from.Labels)
	obj.SetAnnotations(from.Annotations)
	obj.SetOwnerReferences(from.OwnerReferences)
	obj.SetDeletionTimestamp(from.DeletionTimestamp)
}

func (k *kindController) storage() storage {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.store
}

func (k *kindController) setStorage(s storage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.store = s
}

// changes reports whether merging patch into current (as a JSON merge patch
// would) changes anything.
func changes(current, patch any) bool {
	pm, ok1 := patch.(map[string]any)
	cm, ok2 := current.(map[string]any)
	if !ok1 || !ok2 {
		return !sameJSON(current, patch)
	}
	for k, v := range pm {
		if changes(cm[k], v) {
			return true
		}
	}
	return false
}

// applyMergePatch applies a JSON merge patch (RFC 7386) to target in place
// and returns it.
func applyMergePatch(target, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			tv, ok := target[k].(map[string]any)
			if !ok {
				tv = map[string]any{}
			}
			target[k] = applyMergePatch(tv, pv)
		default:
			target[k] = deepCopyJSON(v)
		}
	}
	return target
}

func mergeInto(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if dm, ok := dst[k].(map[string]any); ok {
			if sm, ok := v.(map[string]any); ok {
				dst[k] = mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// toJSONValue turns a handler's result into plain JSON values (maps, slices,
// strings, numbers, booleans), so that it can go into a merge patch.
func toJSONValue(v any) (any, error) {
	if plain, ok := asDecodedJSON(v); ok {
		return plain, nil
	}
	data, err := jsonMarshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(string(data)), nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
