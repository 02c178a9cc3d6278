package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// gate says whether the operator may handle objects: once its startup
// handlers have succeeded, and while no peer with a higher priority is alive.
// Reconciles, event handlers, timers and daemons all look at it; when it
// opens again, every object is reconciled anew. When it opens the first
// time, that is needed only if a reconcile was turned away before: else
// every object is still to come, from the informers' initial lists.
type gate struct {
	mu       sync.Mutex
	started  bool
	pausedBy string // why the operator is paused; "" when it is not
	opened   bool   // it was open once
	refused  bool   // a reconcile was turned away since it was last open
	onOpen   []func()
	onPause  []func()
}

// Open reports whether objects may be handled.
func (g *gate) Open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started && g.pausedBy == ""
}

// admit reports whether a reconcile may handle objects now, and remembers
// one it turns away, so that the objects are reconciled when it opens.
func (g *gate) admit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ok := g.started && g.pausedBy == ""
	g.refused = g.refused || !ok
	return ok
}

// SetStarted records that the startup handlers are done.
func (g *gate) SetStarted() { g.change(func() { g.started = true }) }

// pause closes the gate for a reason; resume opens it again.
func (g *gate) pause(reason string) { g.change(func() { g.pausedBy = reason }) }
func (g *gate) resume()             { g.change(func() { g.pausedBy = "" }) }

// paused returns the reason of a pause, or "".
func (g *gate) paused() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pausedBy
}

// WhenOpened and whenPaused register callbacks for the gate's transitions.
func (g *gate) WhenOpened(fn func()) { g.mu.Lock(); g.onOpen = append(g.onOpen, fn); g.mu.Unlock() }
func (g *gate) whenPaused(fn func()) { g.mu.Lock(); g.onPause = append(g.onPause, fn); g.mu.Unlock() }

func (g *gate) change(fn func()) {
	g.mu.Lock()
	was := g.started && g.pausedBy == ""
	fn()
	now := g.started && g.pausedBy == ""
	var callbacks []func()
	switch {
	case !was && now:
		if g.opened || g.refused {
			callbacks = append(callbacks, g.onOpen...)
		}
		g.opened, g.refused = true, false
	case was && !now:
		callbacks = append(callbacks, g.onPause...)
	}
	g.mu.Unlock()
	for _, cb := range callbacks {
		cb()
	}
}

// WakeUp makes the controller reconcile one object again.
func (k *KindController) WakeUp(ctx context.Context, obj client.Object) {
	go func() {
		select {
		case k.Wake <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
		}
	}()
}

// WakeAll reconciles every object of the kind in the cache, e.g. after a
// pause.
func (k *KindController) WakeAll(ctx context.Context) {
	list, err := k.newList()
	if err == nil {
		err = k.Cache.List(ctx, list)
	}
	if err != nil {
		k.Log.Error(err, "listing objects to handle them again")
		return
	}
	_ = forEachItem(list, func(obj client.Object) { k.WakeUp(ctx, obj) })
}

// newList returns an empty list of the kind, in the Go type the controller
// reads objects into.
func (k *KindController) newList() (client.ObjectList, error) {
	listGVK := k.Gvk.GroupVersion().WithKind(k.Gvk.Kind + "List")
	if _, ok := k.NewObject().(*unstructured.Unstructured); ok {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l, nil
	}
	obj, err := k.scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	list, _ := obj.(client.ObjectList)
	return list, nil
}

// forEachItem calls fn with every item of a list.
func forEachItem(list client.ObjectList, fn func(client.Object)) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			fn(obj)
		}
	}
	return nil
}

// hasStarted reports whether the startup handlers are done.
func (g *gate) hasStarted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}
