package outside

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/scope"
)

// Finder finds the objects of one kind that left its narrowed cache.
type Finder struct {
	GVK       schema.GroupVersionKind
	NewObject func() client.Object // an object of the kind, in the Go type the engine reads
	Narrowed  labels.Selector      // the label selector of the kind's cache
	Own       labels.Selector      // the objects that are this replica's; nil: all
	Live      client.Reader        // reads from the API server
	Held      Held                 // the objects gopf holds, as last seen
	// Holds reports whether an object carries a finalizer gopf answers for.
	Holds func(obj client.Object) bool
	Scope *scope.Scope
	Log   logr.Logger

	mu   sync.Mutex
	left []client.Object // objects that left while the operator was not running (Find)
}

// Held is the process's memory of the objects gopf holds by a finalizer
// (internal/memory's Memories).
type Held interface {
	// Holding returns the UID of the object of that name if gopf last saw
	// it holding a finalizer gopf answers for, or "".
	Holding(key types.NamespacedName) types.UID
	// Hold remembers that the object of that name and UID holds one.
	Hold(key types.NamespacedName, uid types.UID)
}

// Read reads from the API server an object that the kind's narrowed
// cache does not hold, when gopf last saw it holding a finalizer gopf
// answers for: in a narrowed cache, an object whose labels left the
// selector vanishes as if deleted, and still needs its finalizer released,
// as when in-memory filters stop matching. It returns the object if it
// left the selector, and nil if it is gone (or is another object of the
// same name, or is back in the selector and the cache will show it). One
// read per such object; objects gopf released, and those it never held,
// cost nothing.
func (f *Finder) Read(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	uid := f.Held.Holding(key)
	if uid == "" {
		return nil, nil
	}
	obj := f.NewObject()
	if err := f.Live.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s, which left the cache, from the API server: %w", f.GVK.Kind, key, err)
	}
	if obj.GetUID() != uid || f.Narrowed.Matches(labels.Set(obj.GetLabels())) {
		return nil, nil
	}
	f.Log.V(1).Info("the object left the handlers' label selector", "namespace", key.Namespace, "name", key.Name)
	return obj, nil
}

// listPage is how many objects each page of Find's list holds.
const listPage = 500

// Find finds, once per start, the objects of a narrowed kind that left
// the selector while the operator was not running: the cache never shows
// them, and they would keep the finalizer gopf answers for. Once the cache
// has synced, it lists the kind's metadata alone from the API server, in
// pages, in the operator's namespaces and, when sharded, among the shard's
// own objects (another shard releases its own), and reconciles each object that
// holds the finalizer outside the selector (wake), which Read then reads and
// releases as any object that leaves it. It costs one paginated list per
// narrowed kind, and nothing for a kind the cache holds whole. It returns
// when done or when ctx ends (it is a manager.RunnableFunc); a failed list
// is logged, not fatal: those objects keep the finalizer, as before.
func (f *Finder) Find(ctx context.Context, cache interface{ WaitForCacheSync(context.Context) bool },
	wake func(context.Context, client.Object)) error {
	if !cache.WaitForCacheSync(ctx) {
		return nil
	}
	namespaces := f.Scope.Literal()
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var left []client.Object
	for _, ns := range namespaces {
		found, err := f.list(ctx, ns)
		if err != nil {
			if ctx.Err() == nil {
				f.Log.Error(err, "listing the objects that left the handlers' label selector while the operator was not running")
			}
			return nil
		}
		left = append(left, found...)
	}
	if len(left) == 0 {
		return nil
	}
	f.Log.Info("releasing objects that left the handlers' label selector while the operator was not running", "objects", len(left))
	func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.left = append(f.left, left...)
	}()
	for _, obj := range left {
		wake(ctx, obj)
	}
	return nil
}

// list lists, page by page, the metadata of the kind's objects in ns
// ("" for all) and returns those holding a finalizer gopf answers for
// outside the selector, remembered as held (so that Read reads them).
func (f *Finder) list(ctx context.Context, ns string) ([]client.Object, error) {
	var left []client.Object
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(f.GVK.GroupVersion().WithKind(f.GVK.Kind + "List"))
	for {
		opts := []client.ListOption{client.Limit(listPage), client.Continue(list.Continue)}
		if ns != metav1.NamespaceAll {
			opts = append(opts, client.InNamespace(ns))
		}
		if f.Own != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: f.Own})
		}
		if err := f.Live.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing the metadata of %s in %q: %w", f.GVK.Kind, ns, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if !f.Holds(obj) || f.Narrowed.Matches(labels.Set(obj.Labels)) || !f.Scope.Includes(obj.Namespace) {
				continue
			}
			f.Held.Hold(client.ObjectKeyFromObject(obj), obj.UID)
			left = append(left, obj)
		}
		if list.Continue == "" {
			return left, nil
		}
	}
}

// StillHeld returns the objects Find found that gopf still holds: a
// reconcile the gate turned away forgets them, and the cache cannot bring
// them back, so the engine reconciles them again with the cache's.
func (f *Finder) StillHeld() []client.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []client.Object
	for _, obj := range f.left {
		if f.Held.Holding(client.ObjectKeyFromObject(obj)) == obj.GetUID() {
			out = append(out, obj)
		}
	}
	return out
}
