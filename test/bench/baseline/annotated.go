package main

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// observedAnnotation holds the value of the watched field the reconciler
// last handled, on kinds whose typed status has no room for it.
var observedAnnotation = scenario.ResultAnnotation("baseline-observed")

// AnnotatedReconciler does Reconciler's work on a kind whose typed status
// cannot keep the results (Widget, Pod; see package internal/scenario):
// the results and the value of the watched field last handled go in
// annotations, in one merge patch per cause. T is the kind's Go type, or
// *unstructured.Unstructured with Unstructured set: then, as in
// UnstructuredReconciler, the finalizer is added and removed with Update.
type AnnotatedReconciler[T client.Object] struct {
	client.Client
	// Handlers is how many results per cause are stored.
	Handlers int
	// New returns an empty object to read into.
	New func() T
	// Unstructured says that T is unstructured.
	Unstructured bool
}

// Reconcile brings one object up to date: finalizer, create or update
// results, or cleanup on deletion.
func (r *AnnotatedReconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.New()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if obj.GetDeletionTimestamp() != nil {
		if !controllerutil.ContainsFinalizer(obj, finalizer) {
			return ctrl.Result{}, nil
		}
		for range r.Handlers {
			calls.Record("delete", req.Name) // nothing outside the cluster to clean up
		}
		return ctrl.Result{}, client.IgnoreNotFound(r.setFinalizer(ctx, obj, false))
	}
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		// As in Reconciler: the write's watch event brings the object back.
		return ctrl.Result{}, r.setFinalizer(ctx, obj, true)
	}

	field := scenario.Field(obj)
	seen, known := obj.GetAnnotations()[observedAnnotation]
	if known && seen == field {
		return ctrl.Result{}, nil
	}
	orig := obj.DeepCopyObject().(T)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for i := range r.Handlers {
		if known {
			calls.Record("update", req.Name)
			annotations[scenario.ResultAnnotation(scenario.UpdateKey(i, r.Handlers))] = field
		} else {
			calls.Record("create", req.Name)
			annotations[scenario.ResultAnnotation(scenario.CreateKey(i, r.Handlers))] = scenario.CreatedValue
		}
	}
	annotations[observedAnnotation] = field
	obj.SetAnnotations(annotations)
	return ctrl.Result{}, r.Patch(ctx, obj, client.MergeFrom(orig))
}

// setFinalizer adds or removes the finalizer: with Update on unstructured
// objects, else with a merge patch under optimistic locking.
func (r *AnnotatedReconciler[T]) setFinalizer(ctx context.Context, obj T, add bool) error {
	orig := obj.DeepCopyObject().(T)
	if add {
		controllerutil.AddFinalizer(obj, finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, finalizer)
	}
	if r.Unstructured {
		return r.Update(ctx, obj)
	}
	return r.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
