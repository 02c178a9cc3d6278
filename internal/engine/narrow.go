package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Narrowed is a cache that watches some kinds with a label selector, the
// one every handler of the kind implies; NarrowedBy returns it, or nil for
// a kind the cache holds whole. The operator's caches say so (see
// internal/operator's narrowing). Own selects the objects that are this
// replica's to handle at all: those labelled for its shard when the
// operator is sharded (the cache adds it to every selector), nil for all.
type Narrowed interface {
	NarrowedBy(gvk schema.GroupVersionKind) labels.Selector
	Own() labels.Selector
}

// readLeft reads from the API server an object that the kind's narrowed
// cache does not hold, when gopf last saw it holding a finalizer gopf
// answers for (see internal/outside); nil when it did not leave the
// selector, and for a kind the cache holds whole.
func (k *KindController) readLeft(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	if k.outside == nil {
		return nil, nil
	}
	return k.outside.Read(ctx, key)
}

// FindLeft finds, once per start, the objects of a narrowed kind that left
// the selector while the operator was not running, and reconciles each (see
// internal/outside). It returns when done or when ctx ends (it is a
// manager.RunnableFunc).
func (k *KindController) FindLeft(ctx context.Context) error {
	if k.outside == nil {
		return nil
	}
	return k.outside.Find(ctx, k.Cache, k.WakeUp)
}

// wakeLeft reconciles again the objects FindLeft found that gopf still
// holds, with the cache's (WakeAll): a reconcile the gate turned away
// forgets them, and the cache cannot bring them back.
func (k *KindController) wakeLeft(ctx context.Context) {
	if k.outside == nil {
		return
	}
	for _, obj := range k.outside.StillHeld() {
		k.WakeUp(ctx, obj)
	}
}
