package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/outside"
	"github.com/gopf-dev/gopf/internal/patch"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/spawn"
	"github.com/gopf-dev/gopf/internal/state"
)

// KindController is the Reconciler of one watched kind.
type KindController struct {
	Name      string
	GVK       schema.GroupVersionKind
	opts      Options
	Change    []*contract.Handler // change handlers, in registration order
	Level     []*contract.Handler // OnReconcile handlers
	Spawned   []*contract.Handler // timers and daemons
	Events    []*contract.Handler // OnEvent handlers
	Indexes   []*contract.Handler // OnIndex functions
	Cache     cache.Cache         // the manager's, or the shard's (Shared.ShardCache)
	Spawner   *spawn.Spawner      // nil without timers and daemons
	Shared    *Shared
	scheme    *runtime.Scheme
	Wake      chan event.GenericEvent // objects to reconcile again
	Log       logr.Logger
	extra     [][]string    // field paths kept in the essence
	reader    client.Reader // Cache
	writer    client.Client
	mapping   *meta.RESTMapping // the kind's, as DescribeKind found it
	out       *patch.Sender     // sends gopf's writes through writer
	recorder  recorder.EventRecorder
	NewObject func() client.Object
	hasStatus bool
	finalizer string
	Memory    *memory.Memories
	outside   *outside.Finder // the objects that left the kind's narrowed cache (see Narrowed); nil: the cache holds every object
	live      client.Reader   // reads from the API server: the objects of writes whose answer was lost
	mu        sync.Mutex
	store     state.Storage // switched to annotations if status stops keeping the state (storageFallback)
	kopf      *kopfstate.Store
	place     *state.StatusPlace // what the kind's status keeps
	// statusKept is set once a response showed the state in status: the
	// kind's schema keeps it, and later responses need no check.
	statusKept atomic.Bool
	// fellBack is set once storageFallback moved the kind to annotations.
	fellBack atomic.Bool
	// patchFinalizer is set once the API server refused an update of the
	// kind's object that it allowed as a patch (the operator's role lacks
	// update on the resource): the finalizer is patched from then on.
	patchFinalizer atomic.Bool
	// conflicts counts, per object, the reconciles in a row whose write
	// met a newer version of it (see Reconcile).
	conflicts sync.Map
}

var _ reconcile.Reconciler = (*KindController)(nil)

// conflictRetry is how soon a reconcile whose write met a newer version of
// the object runs again, doubled for each conflict in a row up to
// maxConflictRetry; the newer version's watch event usually brings it back
// sooner.
const (
	conflictRetry    = 100 * time.Millisecond
	maxConflictRetry = 30 * time.Second
)

// Reconcile handles one object: it reads the object and gopf's state of
// it, decides what to do (decide) and does it (execute). A write that met
// a newer version of the object (409 Conflict) is routine with other
// writers about: it is retried soon and logged at debug level, not
// returned as an error, which controller-runtime would log with a stack
// trace.
func (k *KindController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := k.reconcile(ctx, req)
	if err == nil || !apierrors.IsConflict(err) {
		k.conflicts.Delete(req.NamespacedName)
		return res, err
	}
	n := 1
	if v, ok := k.conflicts.Load(req.NamespacedName); ok {
		n = v.(int) + 1
	}
	k.conflicts.Store(req.NamespacedName, n)
	wait := min(conflictRetry<<min(n-1, 10), maxConflictRetry)
	logf.FromContext(ctx).V(1).Info("the object changed meanwhile; retrying with its newer version",
		"error", err.Error(), "conflicts", n, "retryIn", wait)
	return reconcile.Result{RequeueAfter: wait}, nil
}

// reconcile is Reconcile but for the handling of conflicts.
func (k *KindController) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k.Shared.busy.Add(1) // before the gate check, so that a pause can wait for it
	defer k.Shared.busy.Add(-1)
	if !k.Shared.Gate.Admit() || !k.Shared.Scope.Includes(req.Namespace) {
		return reconcile.Result{}, nil // paused, starting, or out of scope; reopening the gate reconciles everything
	}
	t, wait, err := k.read(ctx, req)
	if t == nil || err != nil {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	loadErr := t.loadState()
	if s := k.opts.Sharding; s != nil && shard.Draining(t.obj, s.Ring) {
		return t.handOver(ctx, s.Ring)
	}
	d := t.decide(k.memoryFacts(req.NamespacedName, t.mem))
	if d.Route == decide.RouteIgnore {
		if k.Spawner != nil {
			k.Spawner.Sync(req.NamespacedName, t.obj, t.essence, nil)
		}
		return reconcile.Result{}, nil // not ours: no state, no finalizer, no noise
	}
	t.reportBadState(loadErr)
	if t.flushing {
		return t.flush(ctx)
	}
	return t.execute(ctx, d)
}

// read starts a turn: the object from the cache, once the indexes and the
// cache are ready for it. A nil turn means there is nothing to do yet: the
// object is gone, or the reconcile is to be retried after wait (or with
// the error).
func (k *KindController) read(ctx context.Context, req reconcile.Request) (*turn, time.Duration, error) {
	log := logf.FromContext(ctx)
	obj := k.NewObject()
	if err := k.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, 0, fmt.Errorf("reading %s %s from the cache: %w", k.GVK.Kind, req.NamespacedName, err)
		}
		if obj, err = k.readLeft(ctx, req.NamespacedName); err != nil || obj == nil {
			if err == nil {
				k.Memory.Forget(req.NamespacedName)
				if k.Spawner != nil {
					k.Spawner.Forget(req.NamespacedName)
				}
			}
			return nil, 0, err
		}
	}
	if !k.Shared.indexesReady() {
		log.V(1).Info("waiting for the indexes to see their initial lists")
		return nil, 100 * time.Millisecond, nil
	}
	mem := k.Memory.Get(req.NamespacedName, obj.GetUID())
	mem.Held = mem.Held || k.holds(obj) // a view of the cache behind gopf's own write may miss it
	t := &turn{k: k, log: log, obj: obj, now: time.Now(), store: k.storage(), mem: mem}
	if err := t.refresh(); err != nil {
		return nil, 0, err
	}
	// Wait (without blocking the worker) for the cache to show our own last
	// write, so that one change is never handled twice.
	if wait := t.mem.ConsistencyWait(t.store, t.raw, t.essence, k.opts.ConsistencyTimeout); wait > 0 {
		log.V(1).Info("waiting for the cache to catch up with gopf's last write", "wait", wait)
		return nil, wait, nil
	}
	return t, 0, nil
}

// memoryFacts is what the process remembers of an object, for decide.
func (k *KindController) memoryFacts(key types.NamespacedName, mem *memory.Memory) decide.Memory {
	return decide.Memory{Resumed: mem.Resumed, Released: mem.Released, SpawnHolds: func(spawn []*contract.Handler) bool {
		return k.Spawner.NeedsFinalizer(key, spawn)
	}}
}

// execute carries out a decision on the turn's object: the route's steps,
// then the level handlers, then one write of results and state.
func (t *turn) execute(ctx context.Context, d decide.Decision) (reconcile.Result, error) {
	k, key := t.k, client.ObjectKeyFromObject(t.obj)
	switch d.Route {
	case decide.RouteReleased:
		t.log.V(1).Info("waiting for the cache to show the finalizer's removal")
		return reconcile.Result{}, nil
	case decide.RouteDelete:
		if released, err := t.handleDeletion(ctx, d); released || err != nil {
			return reconcile.Result{}, err
		}
	case decide.RouteOthers:
		// Someone else's finalizer holds the object; nothing of ours to do.
		if k.Spawner != nil {
			k.Spawner.Stop(key, handlers.StopDeleted)
		}
	case decide.RouteLive:
		// The finalizer comes before any handler can cause side effects,
		// and goes when nothing needs it.
		if d.Finalizer != decide.FinalizerKept {
			add := d.Finalizer == decide.FinalizerAdd
			if err := k.setFinalizer(ctx, t.obj, add); err != nil {
				return reconcile.Result{}, err
			}
			if add {
				// The handlers run in the turn that the finalizer's own
				// watch event brings, as in Kopf. Their write right after
				// this one would reach the API server before its watch
				// cache shows the finalizer: it would apply that write
				// twice, once to the stale object and again after etcd
				// refused it (8-10% of creates at 5,000 objects).
				t.mem.Held = true
				return reconcile.Result{}, nil
			}
			// A finalizer that goes because nothing needs it any more goes
			// in the turn that stops what no longer selects the object
			// (daemons, timers): the next turn may find it no one's.
			t.refreshMetadata()
			t.mem.Held = k.holds(t.obj)
		}
		t.changeCause(ctx, d)
		if k.Spawner != nil {
			k.Spawner.Sync(key, t.obj, t.essence, d.Spawn)
		}
	}
	res, levelErr := t.runLevel(ctx, d.Level, d.Reason)
	if err := t.write(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if t.requeue > 0 && (res.RequeueAfter == 0 || t.requeue < res.RequeueAfter) {
		res.RequeueAfter = t.requeue
	}
	return res, levelErr
}

// handleDeletion runs the delete handlers of an object gopf's finalizer
// holds, and releases the finalizer once they are done and the object's
// daemons are gone. It reports whether the finalizer was released.
func (t *turn) handleDeletion(ctx context.Context, d decide.Decision) (bool, error) {
	k, key := t.k, client.ObjectKeyFromObject(t.obj)
	done := t.deleteCause(ctx, d)
	gone := k.Spawner == nil || k.Spawner.Stop(key, handlers.StopDeleted)
	switch {
	case done && gone:
		if err := k.setFinalizer(ctx, t.obj, false); err != nil {
			// Remember that the delete handlers are done, so that the
			// retry removes the finalizer without calling them again.
			t.mem.Unsaved = &memory.Unsaved{St: t.st, Results: t.results}
			return false, err
		}
		t.mem.Released = true
		metrics.Causes.WithLabelValues(k.Name, string(handlers.ReasonDelete)).Inc()
		t.log.Info("deletion handled; finalizer removed")
		return true, nil
	case done:
		t.log.V(1).Info("waiting for daemons and timer runs under way to stop before releasing the finalizer")
	}
	return false, nil
}

func (k *KindController) storage() state.Storage {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.store
}

func (k *KindController) setStorage(s state.Storage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.store = s
}

// toJSONValue turns a handler's result into plain JSON values (maps, slices,
// strings, numbers, booleans), so that it can go into a merge patch.
func toJSONValue(v any) (any, error) {
	if plain, ok := state.AsDecodedJSON(v); ok {
		return plain, nil
	}
	data, err := state.Marshal(v)
	if err != nil {
		return nil, err
	}
	return state.DecodeJSON(string(data)), nil
}
