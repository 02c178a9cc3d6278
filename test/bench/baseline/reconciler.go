package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// finalizer keeps a KopfExample until the reconciler has cleaned up after it.
const finalizer = "bench.gopf.dev/baseline"

// observedKey is the status field holding what the reconciler has handled.
const observedKey = "baseline"

// observed is the value under status.baseline.
type observed struct {
	// ObservedGeneration is the metadata.generation last handled.
	ObservedGeneration int64 `json:"observedGeneration"`
}

// Reconciler handles KopfExamples; see the package documentation.
type Reconciler struct {
	client.Client
	// Handlers is how many results per cause are stored.
	Handlers int
	// RetryDelay is how long a failing object (scenario.Failing) waits
	// before its next attempt.
	RetryDelay time.Duration
}

// Reconcile brings one KopfExample up to date: finalizer, create or update
// result, or cleanup on deletion.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj kopfv1.KopfExample
	if err := r.Get(ctx, req.NamespacedName, &obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !obj.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&obj, finalizer) {
			return ctrl.Result{}, nil
		}
		// Nothing outside the cluster to clean up; then let the object go.
		for range r.Handlers {
			calls.Record("delete", req.Name)
		}
		orig := obj.DeepCopy()
		controllerutil.RemoveFinalizer(&obj, finalizer)
		err := r.Patch(ctx, &obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !controllerutil.ContainsFinalizer(&obj, finalizer) {
		orig := obj.DeepCopy()
		controllerutil.AddFinalizer(&obj, finalizer)
		err := r.Patch(ctx, &obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		// The patch's watch event brings the object back with the finalizer.
		// Carrying on here instead would let that event's reconcile read
		// the cache before it shows the status written below, and write
		// the status a second time.
		return ctrl.Result{}, err
	}

	seen, known, err := observedGeneration(&obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if known && seen == obj.Generation {
		return ctrl.Result{}, nil
	}
	if !known && scenario.Failing(&obj) {
		// Its create handlers fail, as gopf's do on a temporary error, and
		// it comes back after the delay, stored nowhere.
		for range r.Handlers {
			calls.Record("create", req.Name)
		}
		return ctrl.Result{RequeueAfter: r.RetryDelay}, nil
	}
	orig := obj.DeepCopy()
	if obj.Status.Extra == nil {
		obj.Status.Extra = map[string]apiextensionsv1.JSON{}
	}
	for i := range r.Handlers {
		var key string
		var result any
		if known {
			calls.Record("update", req.Name)
			key, result = scenario.UpdateKey(i, r.Handlers), scenario.UpdateResult(obj.Spec.Field)
		} else {
			calls.Record("create", req.Name)
			key, result = scenario.CreateKey(i, r.Handlers), scenario.CreateResult()
		}
		if err := setStatus(&obj, key, result); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := setStatus(&obj, observedKey, observed{ObservedGeneration: obj.Generation}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.Status().Patch(ctx, &obj, client.MergeFrom(orig))
}

// observedGeneration returns the generation stored in status.baseline and
// whether there is one.
func observedGeneration(obj *kopfv1.KopfExample) (int64, bool, error) {
	raw, ok := obj.Status.Extra[observedKey]
	if !ok {
		return 0, false, nil
	}
	var o observed
	if err := json.Unmarshal(raw.Raw, &o); err != nil {
		return 0, false, fmt.Errorf("reading status.%s of %s/%s: %w", observedKey, obj.Namespace, obj.Name, err)
	}
	return o.ObservedGeneration, true, nil
}

// setStatus puts value under status.<key>.
func setStatus(obj *kopfv1.KopfExample, key string, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding status.%s: %w", key, err)
	}
	obj.Status.Extra[key] = apiextensionsv1.JSON{Raw: raw}
	return nil
}
