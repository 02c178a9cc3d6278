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
func (t *turn) decide(mem decide.Memory) decide.Decision {
	k := t.k
	sel := decide.Selected{
		Change: k.selected(k.Change, t.obj, t.raw),
		Level:  k.selected(k.Level, t.obj, t.raw),
		Spawn:  k.selected(k.Spawned, t.obj, t.raw),
	}
	o := &decide.Object{Obj: t.obj, Essence: t.essence, Tree: t.essenceTree, Known: t.known, Records: t.st.Progress}
	return decide.Decide(o, k.finalizers(), sel, mem)
}

// finalizers are the finalizers the kind's controller answers for.
func (k *KindController) finalizers() decide.Finalizers {
	return decide.Finalizers{Own: k.finalizer, Kopf: k.opts.KopfFinalizer}
}

// finalizerAtCreate is decide's finalizer step for a new object, as gopf's
// admission webhook asks it before the object is stored (obj is decoded
// into a NewObject, with the namespace of its create request): the
// finalizer to add, or "" when the object gets none (or gopf does not
// handle its namespace).
func (k *KindController) finalizerAtCreate(obj client.Object) string {
	if !k.Shared.Scope.Includes(obj.GetNamespace()) {
		return ""
	}
	sel := decide.Selected{Change: k.selected(k.Change, obj, nil), Spawn: k.selected(k.Spawned, obj, nil)}
	if k.finalizers().Step(obj, decide.WantsFinalizer(sel, decide.FreshProcess)) != decide.FinalizerAdd {
		return ""
	}
	return k.finalizer
}

// OfferCreateFinalizer lets gopf's admission webhook add the kind's
// finalizer to new objects (see finalizerAtCreate) when any handler of the
// kind may need it.
func (k *KindController) OfferCreateFinalizer() {
	if slices.ContainsFunc(k.Change, contract.HoldsObjects) || len(k.Spawned) > 0 {
		k.Shared.operator.AddCreateFinalizer(k.GVK, spec.CreateFinalizer{New: k.NewObject, Decide: k.finalizerAtCreate})
	}
}
