package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// TunedReconciler does UnstructuredReconciler's (or, on a kind whose
// status cannot keep results, AnnotatedReconciler's) work the way an
// expert writes it when the patch is known in advance: reads from the
// cache, the finalizer added and removed with Update, and the results
// with the observed generation (or the value of the watched field last
// handled) sent as a literal merge-patch body. No write builds a
// client.MergeFrom diff, which marshals the object twice and compares the
// two; no write deep-copies the object.
type TunedReconciler struct {
	client.Client
	// Handlers is how many results per cause are stored.
	Handlers int
	// GVK is the kind handled.
	GVK schema.GroupVersionKind
	// Annotations says that the kind's status cannot keep the results:
	// they go in annotations, in a metadata patch (see AnnotatedReconciler).
	Annotations bool
}

// Reconcile brings one object up to date: finalizer, create or update
// results, or cleanup on deletion.
func (r *TunedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.GVK)
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if done, err := finalizeUnstructured(ctx, r.Client, obj, r.Handlers); done {
		return ctrl.Result{}, err
	}
	if r.Annotations {
		return ctrl.Result{}, r.annotate(ctx, obj)
	}
	return ctrl.Result{}, r.storeStatus(ctx, obj)
}

// storeStatus writes the create or update results and the new observed
// generation in one status merge patch, unless this generation was handled.
func (r *TunedReconciler) storeStatus(ctx context.Context, obj *unstructured.Unstructured) error {
	seen, known, err := unstructured.NestedInt64(obj.Object, "status", observedKey, "observedGeneration")
	if err != nil {
		return fmt.Errorf("reading status.%s of %s/%s: %w", observedKey, obj.GetNamespace(), obj.GetName(), err)
	}
	generation := obj.GetGeneration()
	if known && seen == generation {
		return nil
	}
	var field string
	if known {
		field, _, _ = unstructured.NestedString(obj.Object, "spec", "field")
	}
	r.record(known, obj.GetName())
	return r.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, statusPatch(r.Handlers, known, field, generation)))
}

// annotate writes the create or update results and the value of the
// watched field in one metadata merge patch, unless that value was handled.
func (r *TunedReconciler) annotate(ctx context.Context, obj *unstructured.Unstructured) error {
	field := scenario.Field(obj)
	seen, known := obj.GetAnnotations()[observedAnnotation]
	if known && seen == field {
		return nil
	}
	r.record(known, obj.GetName())
	return r.Patch(ctx, obj, client.RawPatch(types.MergePatchType, annotationPatch(r.Handlers, known, field)))
}

// record records the Handlers results about to be stored: update results
// if the object was handled before, else create results.
func (r *TunedReconciler) record(known bool, name string) {
	cause := "create"
	if known {
		cause = "update"
	}
	for range r.Handlers {
		calls.Record(cause, name)
	}
}

// statusPatch is the merge patch storing n create results (updated
// false) or n update results for field, and generation as
// status.baseline.observedGeneration: the same body Reconciler's diff
// produces.
func statusPatch(n int, updated bool, field string, generation int64) []byte {
	b := append(make([]byte, 0, 64+48*n), `{"status":{`...)
	for i := range n {
		if updated {
			b = appendJSONString(append(appendJSONString(b, scenario.UpdateKey(i, n)), `:{"field":`...), field)
			b = append(b, `,"message":"updated"},`...)
		} else {
			b = append(appendJSONString(b, scenario.CreateKey(i, n)), `:{"message":"created"},`...)
		}
	}
	b = append(b, `"`+observedKey+`":{"observedGeneration":`...)
	b = strconv.AppendInt(b, generation, 10)
	return append(b, "}}}"...)
}

// annotationPatch is the merge patch setting the annotations of n create
// results (updated false) or n update results for field, and the
// annotation of the field last handled.
func annotationPatch(n int, updated bool, field string) []byte {
	b := append(make([]byte, 0, 64+48*n), `{"metadata":{"annotations":{`...)
	for i := range n {
		key, value := scenario.CreateKey(i, n), scenario.CreatedValue
		if updated {
			key, value = scenario.UpdateKey(i, n), field
		}
		b = append(appendJSONString(b, scenario.ResultAnnotation(key)), ':')
		b = append(appendJSONString(b, value), ',')
	}
	b = append(appendJSONString(b, observedAnnotation), ':')
	b = appendJSONString(b, field)
	return append(b, "}}}"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	quoted, _ := json.Marshal(s) // a string always encodes
	return append(b, quoted...)
}
