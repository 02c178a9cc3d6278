package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/logs"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/policy"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// BaseCall builds the Cause (and its extras) that every handler kind of
// objects gets: the object's identity, memo, indexes, client and Events.
func (k *KindController) BaseCall(r *contract.Handler, obj client.Object, log logr.Logger) (*handlers.Cause, *contract.Extras) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	c := &handlers.Cause{
		HandlerID:   r.Options.ID,
		Name:        obj.GetName(),
		Namespace:   obj.GetNamespace(),
		UID:         obj.GetUID(),
		Labels:      nonNil(obj.GetLabels()),
		Annotations: nonNil(obj.GetAnnotations()),
		Memo:        (*handlers.Memo)(&k.Memory.Get(key, obj.GetUID()).Memo),
		Param:       r.Options.Param,
		Indexes:     (*handlers.Indexes)(k.Shared.Indexes),
		Client:      k.writer,
	}
	x := &contract.Extras{Post: func(eventType, reason, message string) {
		k.recorder.Eventf(obj, nil, eventType, reason, "Handling", "%s", message)
	}, PostAbout: func(other client.Object, eventType, reason, message string) {
		k.recorder.Eventf(other, obj, eventType, reason, "Handling", "%s", message)
	}}
	k.Shared.Set.BindCause(c, x)
	c.Log = logs.Bridge(log, k.opts.LogEvents, x.Post)
	return c, x
}

// Call runs one handler that has a Call (a change handler, sub-handler,
// timer, event or index handler) on a private copy of obj in the handler's
// Go type (sub-handlers get none: they act through their parent's Cause),
// turning a panic into an error and the result into plain JSON values.
func (k *KindController) Call(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause) (any, error) {
	var out any
	err := k.Invoke(ctx, h, obj, c, func(ctx context.Context, arg client.Object) (err error) {
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
func (k *KindController) callLevel(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause) (res reconcile.Result, err error) {
	err = k.Invoke(ctx, h, obj, c, func(ctx context.Context, arg client.Object) (err error) {
		res, err = h.Reconcile(ctx, arg, c)
		return err
	})
	return res, err
}

// Invoke runs fn with obj in h's Go type and c's logger in the context,
// bounded by h's CallTimeout, recovering a panic, and names the handler and
// object in an error.
func (k *KindController) Invoke(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause,
	fn func(ctx context.Context, arg client.Object) error) error {
	var arg client.Object
	if h.NewObject != nil {
		var err error
		if arg, err = k.ObjectFor(h, obj); err != nil {
			return err
		}
	}
	err := spec.Protect(c.Log, func() error {
		return spec.Bounded(logf.IntoContext(ctx, c.Log), &h.Options, func(ctx context.Context) error { return fn(ctx, arg) })
	})
	if p := (*spec.PanicError)(nil); errors.As(err, &p) {
		return fmt.Errorf("handler %q panicked on %s %s/%s: %w", c.HandlerID, k.GVK.Kind, c.Namespace, c.Name, p)
	}
	if err != nil {
		return fmt.Errorf("handler %q on %s %s/%s: %w", c.HandlerID, k.GVK.Kind, c.Namespace, c.Name, err)
	}
	return nil
}

// FailedForGood reports a handler's permanent failure on the object as a
// Warning Event: it is rare and final, so it is worth saying on the object.
func (k *KindController) FailedForGood(obj client.Object, id string, err error) {
	k.recorder.Eventf(obj, nil, "Warning", "HandlerFailed", "Handling", "handler %q failed permanently: %s", id, spec.Truncate(err.Error(), 900))
}

// ObjectFor gives a handler its own copy of obj, in the Go type it declared.
func (k *KindController) ObjectFor(r *contract.Handler, obj client.Object) (client.Object, error) {
	want := r.NewObject()
	if reflect.TypeOf(want) == reflect.TypeOf(obj) {
		out := obj.DeepCopyObject().(client.Object)
		out.GetObjectKind().SetGroupVersionKind(k.GVK) // handlers see apiVersion and kind, e.g. for Adopt
		return out, nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if u, ok := want.(*unstructured.Unstructured); ok {
		u.SetUnstructuredContent(raw)
		u.SetGroupVersionKind(k.GVK)
		return u, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, want); err != nil {
		return nil, fmt.Errorf("converting %s for %s: %w", k.GVK.Kind, r, err)
	}
	want.GetObjectKind().SetGroupVersionKind(k.GVK)
	return want, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// newCall builds the Cause of a call of the entry for reason.
func (t *turn) newCall(e *decide.Entry, reason handlers.Reason, rec *state.Progress) (*handlers.Cause, *contract.Extras) {
	c, x := t.k.BaseCall(e.Reg, t.obj, logs.WithValuesLazily(t.log, "handler", e.Opts.ID, "cause", reason, "retry", rec.Retries))
	x.SubsAllowed = e.Reg.Kind.Reason() != "" // change handlers
	c.Reason, c.HandlerID, c.Param = reason, e.Opts.ID, e.Opts.Param
	c.Old, c.New, c.Diff = e.Old, e.New, e.Diff
	c.Patch = (*handlers.Patch)(&t.patch)
	x.Result = t.result
	c.Retry, c.Started, c.Runtime = rec.Retries, rec.Started, t.now.Sub(rec.Started)
	return c, x
}

// outcome records what a call's error means for the handler (see judge):
// success, a retry after a delay, or a failure.
func (t *turn) outcome(e *decide.Entry, cause handlers.Reason, rec *state.Progress, err error) {
	log := logs.WithValuesLazily(t.log, "handler", e.Opts.ID, "cause", cause, "retry", rec.Retries)
	before := rec.Message
	rec.Retries++
	rec.Delayed = nil
	v := policy.Judge(e.Opts, t.k.opts.DefaultBackoff, err, rec.Retries, rec.Started, t.now)
	metrics.HandlerCalls.WithLabelValues(t.k.Name, e.Opts.ID, v.Outcome.String()).Inc()
	rec.Message = ""
	if v.Err != nil {
		rec.Message = v.Err.Error()
	}
	switch v.Outcome {
	case policy.Succeeded:
		rec.Success, rec.Message, rec.Handled = true, "", e.Handled
		if v.Ignored {
			log.Info("handler failed; the error is ignored as configured", "error", v.Err.Error())
		} else {
			log.V(1).Info("handler succeeded")
		}
	case policy.Failed:
		rec.Failure, rec.Handled = true, e.Handled
		log.Error(v.Err, "handler failed permanently")
		t.k.FailedForGood(t.obj, e.Opts.ID, v.Err)
	case policy.Retrying:
		next := t.now.Add(v.Delay)
		rec.Delayed = &next
		t.soon(v.Delay)
		if quietRetry(e.Opts, rec, before) {
			if t.quiet == nil {
				t.quiet = map[string]bool{}
			}
			t.quiet[e.Opts.ID] = true
		}
		log.Info("handler failed; it will be retried", "error", v.Err.Error(), "retryIn", v.Delay)
	}
}

// runLevel runs the level handlers on the object.
func (t *turn) runLevel(ctx context.Context, level []*contract.Handler, cause handlers.Reason) (reconcile.Result, error) {
	var res reconcile.Result
	var errs []error
	for _, r := range level {
		c, _ := t.newCall(&decide.Entry{Reg: r, Opts: r.Options, New: t.essenceTree}, "", &state.Progress{Started: t.now})
		c.Reason = cause
		out, err := t.k.callLevel(ctx, r, t.obj, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if out.RequeueAfter > 0 && (res.RequeueAfter == 0 || out.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = out.RequeueAfter
		}
	}
	return res, errors.Join(errs...)
}
