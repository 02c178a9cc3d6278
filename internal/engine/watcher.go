package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/spec"
)

// shared is what the controllers of one registry share: the indexes, and
// whether each index has seen the initial list of its kind.
type shared struct {
	set      *contract.Set
	operator *spec.Operator // what the webhook engine shares
	indexes  *spec.Indexes  // operator.Indexes
	memo     *spec.Memo     // operator.Memo: the operator-level handlers' memo
	client   client.Client
	gate     *gate
	scope    *scope.Scope
	mu       sync.Mutex
	watchers []*watcher      // those that feed indexes
	ctx      context.Context // the manager's, once it runs
	busy     atomic.Int64    // reconciles, timer runs and daemons in progress
}

// newShared makes what the controllers of reg on mgr share, with the
// operator memo and indexes the webhook engine shares too (see
// spec.Operator), and forgets those when the manager stops.
func newShared(mgr manager.Manager, reg *handlers.Registry, sc *scope.Scope, opts Options) (*shared, error) {
	set := contract.SetOf(reg)
	op := set.OperatorOf(mgr)
	for k, v := range opts.Memo {
		op.Memo.Set(k, v)
	}
	sh := &shared{set: set, operator: op, indexes: op.Indexes, gate: &gate{}, scope: sc, memo: op.Memo, client: mgr.GetClient()}
	forget := manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		set.DropOperator(mgr)
		return nil
	})
	if err := mgr.Add(forget); err != nil {
		return nil, fmt.Errorf("gopf: adding the operator's memory: %w", err)
	}
	return sh, nil
}

// operatorCall builds the call of an operator-level handler: the
// operator's memo, indexes and client, and no object.
func (s *shared) operatorCall(h *contract.Handler, log logr.Logger) *handlers.Cause {
	c := &handlers.Cause{HandlerID: h.Options.ID, Param: h.Options.Param, Started: time.Now(),
		Log: log.WithValues("handler", h.Options.ID), Memo: (*handlers.Memo)(s.memo), Indexes: (*handlers.Indexes)(s.indexes), Client: s.client}
	s.set.BindCause(c, &contract.Extras{})
	return c
}

// Idle waits until no reconcile is in progress, or until the timeout.
func (s *shared) Idle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.busy.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Pause stops handlers from starting, for reason (the peering's host).
func (s *shared) Pause(reason string) { s.gate.pause(reason) }

// Resume lets handlers start again.
func (s *shared) Resume() { s.gate.resume() }

// Paused is why the operator is paused, "" when it is not.
func (s *shared) Paused() string { return s.gate.paused() }

// Busy reports whether reconciles, timer runs or daemons are running.
func (s *shared) Busy() bool { return s.busy.Load() > 0 }

// setContext records the manager's context once it runs.
func (s *shared) setContext(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
}

// context returns the manager's context, or nil before it runs.
func (s *shared) context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// indexesReady reports whether every index has seen its initial list.
func (s *shared) indexesReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watchers {
		if !w.synced() {
			return false
		}
	}
	return true
}

// watcher runs the OnEvent handlers and keeps the indexes of one kind, from
// an event handler on the manager's shared informer: it sees every event in
// order, with no reconcile queue in between. It is a Runnable on the
// manager.
type watcher struct {
	k       *KindController
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
		return fmt.Errorf("getting the informer of %s: %w", w.k.Gvk, err)
	}
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if initial {
				w.handle(obj, handlers.EventListed)
			} else {
				w.handle(obj, handlers.EventAdded)
			}
		},
		UpdateFunc: func(_, obj any) { w.handle(obj, handlers.EventModified) },
		DeleteFunc: func(obj any) { w.handle(obj, handlers.EventDeleted) },
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", w.k.Gvk, err)
	}
	w.mu.Lock()
	w.reg = reg
	w.mu.Unlock()
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// synced reports whether the handler has seen the informer's initial list.
func (w *watcher) synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reg != nil && w.reg.HasSynced()
}

// handle updates the indexes and calls the event handlers for one event.
func (w *watcher) handle(raw any, event handlers.EventType) {
	if tomb, ok := raw.(toolscache.DeletedFinalStateUnknown); ok {
		raw = tomb.Obj
	}
	obj, ok := raw.(client.Object)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	for _, r := range w.indexes {
		ix := w.k.shared.indexes.Get(r.Options.ID)
		if event == handlers.EventDeleted || !w.k.shared.scope.Includes(obj.GetNamespace()) || !w.k.selects(r, obj, nil) {
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
	if !w.k.shared.scope.Includes(obj.GetNamespace()) {
		return
	}
	for _, r := range w.events {
		if w.k.shared.gate.open() && w.k.selects(r, obj, nil) {
			_, _ = w.call(r, obj, event)
		}
	}
	if event == handlers.EventDeleted && w.k.spawner == nil && len(w.k.Change)+len(w.k.level) == 0 {
		w.k.memory.forget(key) // no controller forgets it for us
	}
}

// call runs one event handler or index function; errors and panics are
// logged, never retried.
func (w *watcher) call(r *contract.Handler, obj client.Object, event handlers.EventType) (out any, err error) {
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	c, _ := w.k.baseCall(r, obj, w.log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName(), "handler", r.Options.ID, "event", event))
	c.Event = event
	// Index entries stay the values the function returned (they never go
	// to the object), so no JSON conversion as for change handlers' results.
	err = w.k.invoke(ctx, r, obj, c, func(ctx context.Context, arg client.Object) (err error) {
		out, err = r.Call(ctx, arg, c)
		return err
	})
	if err != nil {
		c.Log.Error(err, "handler failed; the error is logged only")
	}
	return out, err
}
