package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// kopfExampleGVK is the kind the unstructured reconciler handles, named as
// a reconciler without Go types names it.
var kopfExampleGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// UnstructuredReconciler does Reconciler's work on unstructured objects, as
// it is often written for a CRD without Go types: the finalizer is added
// and removed with Update, and the results and the observed generation go
// in one status merge patch. Reads come from the cache (the manager's
// client caches unstructured objects).
type UnstructuredReconciler struct {
	client.Client
	// Handlers is how many results per cause are stored.
	Handlers int
}

// Reconcile brings one KopfExample up to date: finalizer, create or update
// result, or cleanup on deletion.
func (r *UnstructuredReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kopfExampleGVK)
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if done, err := finalizeUnstructured(ctx, r.Client, obj, r.Handlers); done {
		return ctrl.Result{}, err
	}

	seen, known, err := unstructured.NestedInt64(obj.Object, "status", observedKey, "observedGeneration")
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading status.%s of %s: %w", observedKey, req.NamespacedName, err)
	}
	if known && seen == obj.GetGeneration() {
		return ctrl.Result{}, nil
	}
	orig := obj.DeepCopy()
	field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
	for i := range r.Handlers {
		key, result, cause := scenario.CreateKey(i, r.Handlers), scenario.CreateResult(), "create"
		if known {
			key, result, cause = scenario.UpdateKey(i, r.Handlers), scenario.UpdateResult(field), "update"
		}
		calls.Record(cause, req.Name)
		if err := unstructured.SetNestedMap(obj.Object, result, "status", key); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := unstructured.SetNestedField(obj.Object, obj.GetGeneration(), "status", observedKey, "observedGeneration"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.Status().Patch(ctx, obj, client.MergeFrom(orig))
}

// finalizeUnstructured is what the unstructured baselines do first with an
// object they read: on deletion, remove the finalizer with an Update,
// recording the delete handlers' calls; else add it if it is missing (the
// Update's watch event brings the object back, as in Reconciler). done says
// that the reconcile ends there, with err.
func finalizeUnstructured(ctx context.Context, c client.Client, obj *unstructured.Unstructured, handlers int) (done bool, err error) {
	if obj.GetDeletionTimestamp() != nil {
		if controllerutil.RemoveFinalizer(obj, finalizer) {
			for range handlers {
				calls.Record("delete", obj.GetName()) // nothing outside the cluster to clean up
			}
			return true, client.IgnoreNotFound(c.Update(ctx, obj))
		}
		return true, nil
	}
	if controllerutil.AddFinalizer(obj, finalizer) {
		return true, c.Update(ctx, obj)
	}
	return false, nil
}
