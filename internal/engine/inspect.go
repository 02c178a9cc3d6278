package engine

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/state"
)

// The engine as the planner (internal/plan) sees it: what a kind's
// controller is (Describe), and what it would do with an object on a
// process's first reconcile (Inspect), without acting on it.

// Description is what the planner knows of the controller of a kind.
type Description struct {
	GVK schema.GroupVersionKind
	// Finalizers are the finalizers the controller answers for.
	Finalizers decide.Finalizers
	// Places are where the controller looks for stored state, in order.
	Places []state.Storage
	// Holders are the change handlers, timers and daemons, in registration
	// order: those that may need the finalizer.
	Holders []*contract.Handler
}

// Describe describes the controller for the planner.
func (k *KindController) Describe() Description {
	return Description{GVK: k.GVK, Finalizers: k.finalizers(), Places: k.store.Places(), Holders: slices.Concat(k.Change, k.Spawned)}
}

// Inspection is what the controller of a kind sees of one object, and what
// the first reconcile of a process that has just started would do with it.
type Inspection struct {
	// Object is the object in the controller's Go type.
	Object client.Object
	// Essence is the object's essence now.
	Essence string
	// State is the stored state, from the first place that has one; nil
	// if none does.
	State *state.State
	// Source is the place State came from, or the place whose state could
	// not be read (StateErr); nil if neither.
	Source   state.Storage
	StateErr error
	// Decision is what the reconcile would do (see internal/decide).
	Decision decide.Decision
}

// Inspect reads item, an object of the kind as listed, as the controller
// would on a process's first reconcile of it: its essence, the stored
// state found in places (Description.Places, or more), in order, until one
// holds state or state that cannot be read, and the decision. It calls and
// writes nothing.
func (k *KindController) Inspect(item *unstructured.Unstructured, places []state.Storage) (*Inspection, error) {
	obj := k.NewObject()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = item.Object
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, obj); err != nil {
		return nil, fmt.Errorf("gopf: converting %s %s/%s: %w", k.GVK.Kind, item.GetNamespace(), item.GetName(), err)
	}
	t := &turn{k: k, obj: obj, store: k.store}
	if err := t.refresh(); err != nil {
		return nil, err
	}
	in := &Inspection{Object: obj, Essence: t.essence}
	for _, s := range places {
		loaded, err := s.Load(t.raw)
		if err != nil {
			in.StateErr, in.Source = err, s
			break
		}
		if loaded != nil {
			in.State, in.Source = loaded, s
			break
		}
	}
	t.known, t.st = in.State, &state.State{}
	if in.State != nil {
		t.st = in.State.Clone()
	}
	in.Decision = t.decide(decide.FreshProcess)
	return in, nil
}
