package main

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// PeriodicReconciler does the gopf operator's timer (or daemon) work the
// controller-runtime way: every reconcile does the check, stores its
// result under status.timer_fn when it differs from what is there, and
// requeues the object after Interval. It needs no finalizer: nothing runs
// for an object once it is gone.
type PeriodicReconciler struct {
	client.Client
	// Interval is the RequeueAfter of every reconcile.
	Interval time.Duration
}

// Reconcile checks one KopfExample and asks to see it again after the
// interval.
func (r *PeriodicReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	end := calls.Run(scenario.CauseRequeue, req.Name)
	var obj kopfv1.KopfExample
	if err := r.Get(ctx, req.NamespacedName, &obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	defer end()
	result := scenario.Check(&obj)
	if stored, ok := obj.Status.Extra[scenario.TimerKey]; ok {
		var old map[string]any
		if json.Unmarshal(stored.Raw, &old) == nil && reflect.DeepEqual(old, result) {
			return ctrl.Result{RequeueAfter: r.Interval}, nil
		}
	}
	orig := obj.DeepCopy()
	if obj.Status.Extra == nil {
		obj.Status.Extra = map[string]apiextensionsv1.JSON{}
	}
	if err := setStatus(&obj, scenario.TimerKey, result); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.Interval}, r.Status().Patch(ctx, &obj, client.MergeFrom(orig))
}
