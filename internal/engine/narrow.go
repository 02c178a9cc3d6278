package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// listPage is how many objects each page of FindLeft's list holds.
const listPage = 500

// FindLeft finds, once per start, the objects of a narrowed kind that left
// the selector while the operator was not running: the cache never shows
// them, and they would keep the finalizer gopf answers for. Once the cache
// has synced, it lists the kind's metadata alone from the API server, in
// pages, in the operator's namespaces and, when sharded, among the shard's
// own objects (another shard releases its own), and reconciles each object that
// holds the finalizer outside the selector, which readLeft then reads and
// releases as any object that leaves it. It costs one paginated list per
// narrowed kind, and nothing for a kind the cache holds whole. It returns
// when done or when ctx ends (it is a manager.RunnableFunc); a failed list
// is logged, not fatal: those objects keep the finalizer, as before.
func (k *KindController) FindLeft(ctx context.Context) error {
	if k.narrowed == nil || k.live == nil || !k.Cache.WaitForCacheSync(ctx) {
		return nil
	}
	namespaces := k.Shared.Scope.Literal()
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var left []client.Object
	for _, ns := range namespaces {
		found, err := k.listLeft(ctx, ns)
		if err != nil {
			if ctx.Err() == nil {
				k.Log.Error(err, "listing the objects that left the handlers' label selector while the operator was not running")
			}
			return nil
		}
		left = append(left, found...)
	}
	if len(left) == 0 {
		return nil
	}
	k.Log.Info("releasing objects that left the handlers' label selector while the operator was not running", "objects", len(left))
	func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.left = append(k.left, left...)
	}()
	for _, obj := range left {
		k.WakeUp(ctx, obj)
	}
	return nil
}

// listLeft lists, page by page, the metadata of the kind's objects in ns
// ("" for all) and returns those holding a finalizer gopf answers for
// outside the selector, remembered as held (so that readLeft reads them).
func (k *KindController) listLeft(ctx context.Context, ns string) ([]client.Object, error) {
	var left []client.Object
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
	for {
		opts := []client.ListOption{client.Limit(listPage), client.Continue(list.Continue)}
		if ns != metav1.NamespaceAll {
			opts = append(opts, client.InNamespace(ns))
		}
		if k.own != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: k.own})
		}
		if err := k.live.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing the metadata of %s in %q: %w", k.GVK.Kind, ns, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if !k.holds(obj) || k.narrowed.Matches(labels.Set(obj.Labels)) || !k.Shared.Scope.Includes(obj.Namespace) {
				continue
			}
			k.Memory.Hold(client.ObjectKeyFromObject(obj), obj.UID)
			left = append(left, obj)
		}
		if list.Continue == "" {
			return left, nil
		}
	}
}

// wakeLeft reconciles again the objects FindLeft found that gopf still
// holds, with the cache's (WakeAll): a reconcile the gate turned away
// forgets them, and the cache cannot bring them back.
func (k *KindController) wakeLeft(ctx context.Context) {
	for _, obj := range k.leftObjects() {
		if k.Memory.Holding(client.ObjectKeyFromObject(obj)) == obj.GetUID() {
			k.WakeUp(ctx, obj)
		}
	}
}

// leftObjects returns the objects FindLeft found.
func (k *KindController) leftObjects() []client.Object {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.left
}
