package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Narrowed is a cache that watches some kinds with a label selector, the
// one every handler of the kind implies; NarrowedBy returns it, or nil for
// a kind the cache holds whole. The operator's caches say so (see
// internal/operator's narrowing).
type Narrowed interface {
	NarrowedBy(gvk schema.GroupVersionKind) labels.Selector
}

// readLeft reads from the API server an object that the kind's narrowed
// cache does not hold, when gopf last saw it holding a finalizer gopf
// answers for: in a narrowed cache, an object whose labels left the
// selector vanishes as if deleted, and still needs its finalizer released,
// as when in-memory filters stop matching. It returns the object if it
// left the selector, and nil if it is gone (or is another object of the
// same name, or is back in the selector and the cache will show it). One
// read per such object; objects gopf released, and those it never held,
// cost nothing.
func (k *KindController) readLeft(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	if k.narrowed == nil || k.live == nil {
		return nil, nil
	}
	uid := k.Memory.Holding(key)
	if uid == "" {
		return nil, nil
	}
	obj := k.NewObject()
	if err := k.live.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s, which left the cache, from the API server: %w", k.GVK.Kind, key, err)
	}
	if obj.GetUID() != uid || k.narrowed.Matches(labels.Set(obj.GetLabels())) {
		return nil, nil
	}
	k.Log.V(1).Info("the object left the handlers' label selector", "namespace", key.Namespace, "name", key.Name)
	return obj, nil
}
