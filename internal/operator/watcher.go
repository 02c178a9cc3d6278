package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/spec"
)

// watcher runs the OnEvent handlers and keeps the indexes of one kind, from
// an event handler on the manager's shared informer: it sees every event in
// order, with no reconcile queue in between. It is a Runnable on the
// manager.
type watcher struct {
	k       *engine.KindController
	cache   cache.Cache
	events  []*contract.Handler
	indexes []*contract.Handler

	mu  sync.Mutex
	reg toolscache.ResourceEventHandlerRegistration
	ctx context.Context
	log logr.Logger
}

// Start adds the event handler to the kind's informer and removes it when
// the manager stops.
func (w *watcher) Start(ctx context.Context) error {
	w.log = w.k.Log.WithName("watcher")
	inf, err := w.cache.GetInformer(ctx, w.k.NewObject(), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the informer of %s: %w", w.k.GVK, err)
	}
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if initial {
				w.handle(obj, "")
			} else {
				w.handle(obj, watch.Added)
			}
		},
		UpdateFunc: func(_, obj any) { w.handle(obj, watch.Modified) },
		DeleteFunc: func(obj any) { w.handle(obj, watch.Deleted) },
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", w.k.GVK, err)
	}
	w.mu.Lock()
	w.reg = reg
	w.mu.Unlock()
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// Synced reports whether the handler has seen the informer's initial list.
func (w *watcher) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reg != nil && w.reg.HasSynced()
}

// handle updates the indexes and calls the event handlers for one event.
func (w *watcher) handle(raw any, event watch.EventType) {
	if tomb, ok := raw.(toolscache.DeletedFinalStateUnknown); ok {
		raw = tomb.Obj
	}
	obj, ok := raw.(client.Object)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	for _, r := range w.indexes {
		ix := w.k.Shared.Indexes.Get(r.Options.ID)
		if event == watch.Deleted || !w.k.Shared.Scope.Includes(obj.GetNamespace()) || !w.k.Selects(r, obj, nil) {
			spec.SetEntries(ix, key.String(), nil)
			continue
		}
		out, err := w.call(r, obj, event)
		if err != nil {
			continue // the object keeps its previous entries
		}
		entries, _ := out.(map[any]any)
		spec.SetEntries(ix, key.String(), entries)
	}
	if !w.k.Shared.Scope.Includes(obj.GetNamespace()) {
		return
	}
	if len(w.events) > 0 {
		w.k.Shared.Gate.AwaitShard(shardDecision)
	}
	for _, r := range w.events {
		if w.k.Shared.Gate.Open() && w.k.Selects(r, obj, nil) {
			_, _ = w.call(r, obj, event)
		}
	}
	if event == watch.Deleted && w.k.Spawner == nil && len(w.k.Change)+len(w.k.Level) == 0 {
		w.k.Memory.Forget(key) // no controller forgets it for us
	}
}

// shardDecision bounds the wait of a sharded replica's first watch events
// for it to know whether it holds its shard: its Lease's first acquisition
// takes a request or two.
const shardDecision = 10 * time.Second

// call runs one event handler or index function; errors and panics are
// logged, never retried.
func (w *watcher) call(r *contract.Handler, obj client.Object, event watch.EventType) (out any, err error) {
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	c, _ := w.k.BaseCall(r, obj, w.log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName(), "handler", r.Options.ID, "event", event))
	c.Event = event
	// Index entries stay the values the function returned (they never go
	// to the object), so no JSON conversion as for change handlers' results.
	err = w.k.Invoke(ctx, r, obj, c, func(ctx context.Context, arg client.Object) (err error) {
		out, err = r.Call(ctx, arg, c)
		return err
	})
	if err != nil {
		c.Log.Error(err, "handler failed; the error is logged only")
	}
	return out, err
}
