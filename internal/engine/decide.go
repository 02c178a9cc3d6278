package engine

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Decide works out what a reconcile does with the turn's object (see
// internal/decide): from the object, its essence, what gopf knows of it,
// the registrations that select it and the process's memory mem. It
// changes nothing.
func (t *Turn) Decide(mem decide.Memory) decide.Decision {
	k := t.K
	sel := decide.Selected{
		Change: k.selected(k.Change, t.Obj, t.Raw),
		Level:  k.selected(k.Level, t.Obj, t.Raw),
		Spawn:  k.selected(k.Spawned, t.Obj, t.Raw),
	}
	o := &decide.Object{Obj: t.Obj, Essence: t.Essence, Tree: t.essenceTree, Known: t.Known, Records: t.St.Progress}
	return decide.Decide(o, k.finalizers(), sel, mem)
}

// finalizers are the finalizers the kind's controller answers for.
func (k *KindController) finalizers() decide.Finalizers {
	return decide.Finalizers{Own: k.Finalizer, Kopf: k.Opts.KopfFinalizer}
}

// FinalizerAtCreate is decide's finalizer step for a new object, as gopf's
// admission webhook asks it before the object is stored (obj is decoded
// into a NewObject, with the namespace of its create request): the
// finalizer to add, or "" when the object gets none (or gopf does not
// handle its namespace).
func (k *KindController) FinalizerAtCreate(obj client.Object) string {
	if !k.Shared.Scope.Includes(obj.GetNamespace()) {
		return ""
	}
	sel := decide.Selected{Change: k.selected(k.Change, obj, nil), Spawn: k.selected(k.Spawned, obj, nil)}
	if k.finalizers().Step(obj, decide.WantsFinalizer(sel, decide.FreshProcess)) != decide.FinalizerAdd {
		return ""
	}
	return k.Finalizer
}

// OfferCreateFinalizer lets gopf's admission webhook add the kind's
// finalizer to new objects (see FinalizerAtCreate) when any handler of the
// kind may need it.
func (k *KindController) OfferCreateFinalizer() {
	if slices.ContainsFunc(k.Change, contract.HoldsObjects) || len(k.Spawned) > 0 {
		k.Shared.operator.AddCreateFinalizer(k.GVK, spec.CreateFinalizer{New: k.NewObject, Decide: k.FinalizerAtCreate})
	}
}
