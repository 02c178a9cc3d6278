package handlers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// EventType is the kind of watch event an OnEvent handler sees.
type EventType string

// The watch events.
const (
	// EventListed: the object was in the initial list when the operator
	// started watching.
	EventListed EventType = "listed"
	// EventAdded, EventModified, EventDeleted: the object was created,
	// changed or deleted while the operator watched.
	EventAdded    EventType = "added"
	EventModified EventType = "modified"
	EventDeleted  EventType = "deleted"
)

// EventFunc is a raw event handler; see OnEvent.
type EventFunc[T client.Object] func(ctx context.Context, obj T, c *Cause) error

// OnEvent registers fn to be called for every watch event of every selected
// object — the initial list, additions, modifications and deletions, each
// with its type in Cause.Event — in the order the informer delivers them.
// It keeps no state, adds no finalizer and is never retried, so it takes no
// error policy options: its errors and panics are logged, and the next event
// comes as usual. It sees every event, not the de-duplicated reconcile
// requests a Reconciler sees.
func OnEvent[T client.Object](r *Registry, fn EventFunc[T], opts ...EventOption) {
	var call HandlerFunc[T]
	if fn != nil {
		call = func(ctx context.Context, obj T, c *Cause) (any, error) { return nil, fn(ctx, obj, c) }
	}
	registerCall(r, spec.KindEvent, fn, call, apply(opts))
}

// IndexFunc maps an object to index entries: for each key, the value this
// object contributes under it. A nil or empty map puts the object in no key.
type IndexFunc[T client.Object] func(obj T) map[string]any

// OnIndex registers an in-memory index named name over the selected objects
// of type T: for every key, the values all objects contributed under it. It
// is kept up to date on every event, and an object's entries go when the
// object goes or stops matching the filters. Handlers of every kind read it
// as c.Indexes.Get(name). No change handler runs before every index has
// seen the initial list of its kind. An index function cannot fail; a panic
// in it is logged and leaves the object's entries as they were.
func OnIndex[T client.Object](r *Registry, name string, fn IndexFunc[T], opts ...IndexOption) {
	var call HandlerFunc[T]
	if fn != nil {
		call = func(_ context.Context, obj T, _ *Cause) (any, error) { return fn(obj), nil }
	}
	registerCall(r, spec.KindIndex, fn, call, apply(opts, set(func(d *draft) { d.ID = name })))
}
