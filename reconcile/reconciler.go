package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/handlers"
)

// kindController is the Reconciler of one watched kind.
type kindController struct {
	name      string
	gvk       schema.GroupVersionKind
	opts      Options
	regs      []*handlers.Registration
	reader    client.Reader // the manager's cache
	writer    client.Client
	scheme    *runtime.Scheme
	newObject func() client.Object
	hasStatus bool
	memory    *memories

	mu    sync.Mutex
	store storage // switched to annotations if the API server prunes status state
}

var _ reconcile.Reconciler = (*kindController)(nil)

// Reconcile handles one object: it derives the cause from the stored state,
// runs the matching handlers and writes their results and the new state.
func (k *kindController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	obj := k.newObject()
	if err := k.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			k.memory.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s %s from the cache: %w", k.gvk.Kind, req.NamespacedName, err)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("converting %s %s: %w", k.gvk.Kind, req.NamespacedName, err)
	}
	mem := k.memory.get(req.NamespacedName, obj.GetUID())
	store := k.storage()

	// Wait (without blocking the worker) for the cache to show our own last
	// write, so that one change is never handled twice.
	if wait := mem.consistencyWait(store, raw, k.opts.ConsistencyTimeout); wait > 0 {
		log.V(1).Info("waiting for the cache to catch up with gopf's last write", "wait", wait)
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	stored, err := store.load(raw)
	if err != nil {
		// Treat unreadable state as no state: running a handler again is
		// safer than silently skipping it.
		log.Info("ignoring stored state that cannot be read; the object is handled as new", "problem", err.Error())
		stored = nil
	}
	current, err := json.Marshal(essence(raw, k.opts.Prefix))
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("encoding the essence of %s %s: %w", k.gvk.Kind, req.NamespacedName, err)
	}
	if stored != nil {
		// The create handlers have run; later issues add update, resume
		// and delete causes here.
		return reconcile.Result{}, nil
	}

	var p patch
	for _, r := range k.regs {
		if r.Reason != handlers.ReasonCreate {
			continue
		}
		result, err := k.call(ctx, r, obj, handlers.ReasonCreate)
		if err != nil {
			return reconcile.Result{}, err
		}
		if result != nil {
			p.setStatus(r.Options.ID, result)
		}
	}
	st := &state{Essence: string(current)}
	store.save(&p, st)
	if err := k.write(ctx, obj, &p, st); err != nil {
		return reconcile.Result{}, err
	}
	mem.wrote(st)
	log.Info("handled", "cause", handlers.ReasonCreate)
	return reconcile.Result{}, nil
}

// call runs one handler on a private copy of obj, turning a panic into an
// error and the result into plain JSON values.
func (k *kindController) call(ctx context.Context, r *handlers.Registration, obj client.Object, reason handlers.Reason) (result any, err error) {
	log := logf.FromContext(ctx).WithValues("handler", r.Options.ID, "cause", reason)
	arg, err := k.objectFor(r, obj)
	if err != nil {
		return nil, err
	}
	c := &handlers.Cause{
		Reason:      reason,
		HandlerID:   r.Options.ID,
		Name:        obj.GetName(),
		Namespace:   obj.GetNamespace(),
		UID:         obj.GetUID(),
		Labels:      nonNil(obj.GetLabels()),
		Annotations: nonNil(obj.GetAnnotations()),
		Started:     time.Now(),
		Log:         log,
		Param:       r.Options.Param,
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("panic: %v", p), "handler panicked", "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("%s panicked on %s %s/%s: %v", r, k.gvk.Kind, c.Namespace, c.Name, p)
		}
	}()
	out, err := r.Call(logf.IntoContext(ctx, log), arg, c)
	if err != nil {
		return nil, fmt.Errorf("%s failed on %s %s/%s: %w", r, k.gvk.Kind, c.Namespace, c.Name, err)
	}
	if out == nil {
		return nil, nil
	}
	return toJSONValue(out, r)
}

// objectFor gives a handler its own copy of obj, in the Go type it declared.
func (k *kindController) objectFor(r *handlers.Registration, obj client.Object) (client.Object, error) {
	want := r.NewObject()
	if fmt.Sprintf("%T", want) == fmt.Sprintf("%T", obj) {
		return obj.DeepCopyObject().(client.Object), nil
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
	return want, nil
}

// write sends the patch: status first (results, and state when it lives
// there), then the main resource. If the API server dropped the state from
// status, the kind's state moves to annotations for good.
func (k *kindController) write(ctx context.Context, obj client.Object, p *patch, st *state) error {
	if p.status != nil && !k.hasStatus {
		if p.object == nil {
			p.object = map[string]any{}
		}
		p.object["status"] = p.status
		p.status = nil
	}
	if p.status != nil {
		if err := k.send(ctx, obj, map[string]any{"status": p.status}, true); err != nil {
			return err
		}
		if _, isStatus := k.storage().(statusStorage); isStatus {
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err == nil && !k.storage().saved(raw, st) {
				logf.FromContext(ctx).Info("WARNING: the API server dropped gopf's state from status (the status schema does not keep unknown fields); keeping the state of this kind in annotations from now on",
					"field", "status."+k.opts.StatusField)
				fallback := annotationStorage{prefix: k.opts.Prefix}
				k.setStorage(fallback)
				fallback.save(p, st)
			}
		}
	}
	if p.object != nil {
		return k.send(ctx, obj, p.object, false)
	}
	return nil
}

// send applies one JSON merge patch, to the status subresource or the main
// resource. obj is updated from the response.
func (k *kindController) send(ctx context.Context, obj client.Object, body map[string]any, status bool) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding the patch for %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	p := client.RawPatch(types.MergePatchType, data)
	if status {
		err = k.writer.Status().Patch(ctx, obj, p)
	} else {
		err = k.writer.Patch(ctx, obj, p)
	}
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
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

// toJSONValue turns a handler's result into plain JSON values (maps, slices,
// strings, numbers, booleans), so that it can go into a merge patch.
func toJSONValue(v any, r *handlers.Registration) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s returned a result that cannot be stored as JSON: %w", r, err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s returned a result that cannot be stored as JSON: %w", r, err)
	}
	return out, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
