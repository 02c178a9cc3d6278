package handlers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
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
// It keeps no state, adds no finalizer and is never retried: its errors and
// panics are logged. It sees every event, not the de-duplicated reconcile
// requests a Reconciler sees. Its result, if any, is ignored.
func OnEvent[T client.Object](r *Registry, fn EventFunc[T], opts ...Option) {
	var handler HandlerFunc[T]
	if fn != nil {
		handler = func(ctx context.Context, obj T, c *Cause) (any, error) { return nil, fn(ctx, obj, c) }
	}
	o := append([]Option{optionFunc(func(o *Options) { o.watch = watchEvent; o.named = fn })}, opts...)
	register(r, "", handler, nil, nil, o)
}

// IndexFunc maps an object to index entries: for each key, the value this
// object contributes under it. A nil or empty map puts the object in no key.
type IndexFunc[T client.Object] func(obj T) map[string]any

// OnIndex registers an in-memory index named name over the selected objects
// of type T: for every key, the values all objects contributed under it. It
// is kept up to date on every event, and an object's entries go when the
// object goes or stops matching the filters. Handlers of every kind read it
// as c.Indexes.Get(name). No change handler runs before every index has
// seen the initial list of its kind.
func OnIndex[T client.Object](r *Registry, name string, fn IndexFunc[T], opts ...Option) {
	var handler HandlerFunc[T]
	if fn != nil {
		handler = func(ctx context.Context, obj T, c *Cause) (any, error) { return fn(obj), nil }
	}
	o := append([]Option{ID(name), optionFunc(func(o *Options) { o.watch = watchIndex; o.named = fn })}, opts...)
	register(r, "", handler, nil, nil, o)
}

// watchKind marks event handlers and indexes among registrations.
type watchKind int

const (
	watchNone watchKind = iota
	watchEvent
	watchIndex
)
