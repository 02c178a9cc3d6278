package handlers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// OnEvent registers fn to be called for every watch event of every selected
// object — the initial list, additions, modifications and deletions, each
// with its type in Cause.Event (Kubernetes' watch.Added, watch.Modified and
// watch.Deleted; "" for the objects of the initial list, as Kopf's None) —
// in the order the informer delivers them.
// It keeps no state, adds no finalizer and is never retried, so it takes no
// error policy options: its errors and panics are logged, and the next event
// comes as usual. It sees every event, not the de-duplicated reconcile
// requests a Reconciler sees.
func OnEvent[T client.Object](r *Registry, fn func(ctx context.Context, obj T, c *Cause) error, opts ...EventOption) {
	var call HandlerFunc[T]
	if fn != nil {
		call = func(ctx context.Context, obj T, c *Cause) (any, error) { return nil, fn(ctx, obj, c) }
	}
	registerCall(r, spec.KindEvent, fn, call, apply(opts))
}

// OnIndex registers an in-memory index named name over the selected objects
// of type T: for every key, the values all objects contributed under it. It
// is kept up to date on every event, and an object's entries go when the
// object goes or stops matching the filters. OnIndex returns the Index that
// reads it: handlers of every kind — change, timer, daemon, event and index
// handlers, admission handlers, and the operator-level OnStartup, OnCleanup
// and OnProbe — call its Get with the indexes they are given (c.Indexes,
// a.Indexes for admission handlers), as Kopf passes an index by its name
// as a keyword argument. No object handler runs before every index has seen
// the initial list of its kind; operator-level and admission handlers get no
// such promise (startup handlers run while the indexes fill). An index
// function cannot fail; a panic in it is logged and leaves the object's
// entries as they were.
//
// fn maps an object to index entries: for each key, the value this object
// contributes under it. Keys are of any comparable type (strings, numbers,
// structs of them, as Kopf's any hashable key); a nil or empty map puts the
// object in no key. Its c is what Kopf gives index functions as keyword
// arguments: the object's identity, labels and annotations, c.Log (the
// object's logger), c.Memo (the object's memo, the one its handlers share)
// and c.Indexes, the operator's indexes: other indexes, or this one as it
// is before the object's entries are replaced, for example for an index of
// the objects some other index names. Index functions run while the indexes
// fill, so at start another index may still lack objects of its kind; a
// change of another index does not run the function again for objects that
// had no event (see When). Results, Patch and Events are not for index
// functions: they run for every watch event and change nothing.
func OnIndex[T client.Object, K comparable, V any](r *Registry, name string, fn func(obj T, c *Cause) map[K]V, opts ...IndexOption) Index[K, V] {
	var call HandlerFunc[T]
	if fn != nil {
		call = func(_ context.Context, obj T, c *Cause) (any, error) {
			entries := fn(obj, c)
			if len(entries) == 0 {
				return map[any]any(nil), nil
			}
			out := make(map[any]any, len(entries))
			for k, v := range entries {
				out[k] = v
			}
			return out, nil
		}
	}
	registerCall(r, spec.KindIndex, fn, call, apply(opts, set(func(d *draft) { d.ID = name })))
	return Index[K, V]{name: name}
}

// OnFlatIndex registers an in-memory index named name that collects one
// value per selected object of type T, with no keys to look them up by:
// Kopf's index of an index function that returns something other than a
// dict. Its one key is nil, so the returned Index's Get(c.Indexes, nil)
// lists every object's value. fn gets the Cause OnIndex's function gets. It
// behaves as OnIndex otherwise; to leave an object out, filter it out.
func OnFlatIndex[T client.Object, V any](r *Registry, name string, fn func(obj T, c *Cause) V, opts ...IndexOption) Index[any, V] {
	var call HandlerFunc[T]
	if fn != nil {
		call = func(_ context.Context, obj T, c *Cause) (any, error) {
			return map[any]any{nil: fn(obj, c)}, nil
		}
	}
	registerCall(r, spec.KindIndex, fn, call, apply(opts, set(func(d *draft) { d.ID = name })))
	return Index[any, V]{name: name}
}

// Index is an index registered by OnIndex or OnFlatIndex: the handle
// through which handlers read it, with the key and value types of its index
// function, so that no type assertions are needed. It reads the operator's
// indexes a handler is given (Cause.Indexes, or Admission's Indexes):
//
//	podsByNode := handlers.OnIndex(reg, "pods-by-node", func(pod *corev1.Pod, _ *handlers.Cause) map[string]string {
//		return map[string]string{pod.Spec.NodeName: pod.Name}
//	})
//	...
//	names := podsByNode.Get(c.Indexes, node.Name) // []string
//
// An Index is a small value; copy it into the handlers that read it.
type Index[K comparable, V any] struct {
	name string
}

// Get returns the values under key in the index, ordered by the objects
// that contributed them (namespace/name), or nil.
func (ix Index[K, V]) Get(ixs *Indexes, key K) []V {
	values := ix.of(ixs).Get(key)
	if values == nil {
		return nil
	}
	out := make([]V, len(values))
	for i, v := range values {
		out[i], _ = v.(V) // a nil value of an interface type V stays the zero V
	}
	return out
}

// Keys returns the keys that have values in the index, sorted by how fmt
// prints them (%v), and by type where two print alike; string keys sort as
// strings. Its length is Kopf's len() of the index.
func (ix Index[K, V]) Keys(ixs *Indexes) []K {
	keys := ix.of(ixs).Keys()
	if keys == nil {
		return nil
	}
	out := make([]K, len(keys))
	for i, k := range keys {
		out[i], _ = k.(K)
	}
	return out
}

// of finds the index in ixs; a missing one (nil) reads as empty.
func (ix Index[K, V]) of(ixs *Indexes) *spec.Index { return (*spec.Indexes)(ixs).Get(ix.name) }
