package operator

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Setup is reconcile.Setup: it compiles the registrations of reg into one
// controller per watched kind (see lazyKinds for kinds not served yet) and
// adds them to mgr.
func Setup(mgr manager.Manager, reg *handlers.Registry, opts engine.Options) error {
	if err := reg.Err(); err != nil {
		return err
	}
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("gopf: creating a discovery client: %w", err)
	}

	sc, err := scope.New(opts.Namespaces)
	if err != nil {
		return fmt.Errorf("gopf: %w", err)
	}
	sh, err := engine.NewShared(mgr, reg, sc, opts)
	if err != nil {
		return err
	}
	if sh.ShardCache, err = joinRing(mgr, reg, sh, opts); err != nil {
		return err
	}
	if err := setupActivities(mgr, reg, sh, opts); err != nil {
		return err
	}
	newKind := func(gvk schema.GroupVersionKind, proto *contract.Handler) (*engine.KindController, error) {
		return engine.NewKindController(mgr, disco, gvk, proto, opts, sh)
	}
	kinds, pending, err := KindsOf(reg, mgr.GetScheme(), mgr.GetRESTMapper(), newKind)
	if err != nil {
		return err
	}
	for _, kc := range kinds {
		if err := start(kc, mgr, opts); err != nil {
			return err
		}
	}
	if err := addAssigner(mgr, contract.SetOf(reg).OperatorOf(mgr), kinds, opts); err != nil {
		return err
	}
	return addLazyKinds(mgr, disco, reg, kinds, pending, opts, sh)
}

// addLazyKinds adds to mgr, if there are any, the kinds that are not served
// yet (pending) and those that handlers choose among the served ones (see
// lazyKinds). A chosen kind is left to its own handlers when it has some:
// those of the kinds that started, and of the pending ones. The indexes of
// pending kinds exist from the start, as those of served kinds do.
func addLazyKinds(
	mgr manager.Manager, disco discovery.DiscoveryInterface, reg *handlers.Registry, started []*engine.KindController, pending []*pendingKind,
	opts engine.Options, sh *engine.Shared,
) error {
	selected := selectedOf(reg)
	if len(pending)+len(selected) == 0 {
		return nil
	}
	explicit := map[schema.GroupKind]bool{}
	for _, kc := range started {
		explicit[kc.GVK.GroupKind()] = true
	}
	for _, p := range pending {
		explicit[p.gvk.GroupKind()] = true
	}
	for _, p := range pending {
		for _, r := range p.handlers {
			if r.Kind == spec.KindIndex {
				if sh.Indexes.Get(r.Options.ID) != nil {
					return fmt.Errorf("gopf: %s: an index of that name exists already", r)
				}
				spec.AddIndex(sh.Indexes, r.Options.ID)
			}
		}
	}
	if err := mgr.Add(newLazyKinds(mgr, disco, pending, selected, explicit, opts, sh)); err != nil {
		return fmt.Errorf("gopf: adding the kinds not served yet or chosen among those served: %w", err)
	}
	return nil
}

// start adds the kind's watcher (event handlers and indexes), spawner
// (timers and daemons) and controller (everything else) to the manager;
// each only if the kind has handlers for it.
func start(k *engine.KindController, mgr manager.Manager, opts engine.Options) error {
	// Create the kind's informer now, so that the manager's cache sync
	// waits for it before anything else starts.
	if _, err := k.Cache.GetInformer(context.Background(), k.NewObject(), cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("gopf: watching %s: %w", k.GVK, err)
	}
	n, ok := k.Cache.(engine.Narrowed)
	narrowed := ok && n.NarrowedBy(k.GVK) != nil
	if narrowed {
		k.Log.Info("watching only the objects the handlers' label filters may select", "selector", n.NarrowedBy(k.GVK).String())
	}
	if err := addWatcher(k, mgr); err != nil {
		return err
	}
	if len(k.Change)+len(k.Level)+len(k.Spawned) == 0 {
		return nil
	}
	if err := addController(k, mgr, opts); err != nil {
		return err
	}
	if narrowed {
		// with the controller: once per start, after the caches sync
		if err := mgr.Add(manager.RunnableFunc(k.FindLeft)); err != nil {
			return fmt.Errorf("gopf: finding the objects of %s that left the selector: %w", k.GVK, err)
		}
	}
	return nil
}

// addWatcher adds the watcher of the kind's event handlers and indexes to
// the manager, if it has any, and declares its indexes, whose names are
// unique across the operator.
func addWatcher(k *engine.KindController, mgr manager.Manager) error {
	if len(k.Events)+len(k.Indexes) == 0 {
		return nil
	}
	w := &watcher{k: k, cache: k.Cache, events: k.Events, indexes: k.Indexes}
	for _, r := range k.Indexes {
		if k.Shared.Indexes.Get(r.Options.ID) != nil {
			return fmt.Errorf("gopf: %s: an index of that name exists already", r)
		}
		spec.AddIndex(k.Shared.Indexes, r.Options.ID)
	}
	if len(k.Indexes) > 0 {
		k.Shared.Mu.Lock()
		k.Shared.Watchers = append(k.Shared.Watchers, w)
		k.Shared.Mu.Unlock()
	}
	if err := mgr.Add(w); err != nil {
		return fmt.Errorf("gopf: watching %s: %w", k.GVK, err)
	}
	return nil
}

// addController adds the kind's controller, which runs its change and
// level handlers and schedules its timers and daemons, and the spawner that
// runs those, to the manager.
func addController(k *engine.KindController, mgr manager.Manager, opts engine.Options) error {
	k.OfferCreateFinalizer()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(k.Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, LogConstructor: reconcileLog(mgr, k)})
	// A shard watches its objects, and their children, in its own cache.
	sharded := k.Cache != mgr.GetCache()
	if sharded {
		b = b.WatchesRawSource(source.Kind(k.Cache, k.NewObject(), &ctrlhandler.TypedEnqueueRequestForObject[client.Object]{}))
	} else {
		b = b.For(k.NewObject())
	}
	if len(k.Spawned) > 0 {
		k.Spawner = k.NewSpawner(opts.MaxConcurrentReconciles)
		if err := mgr.Add(k.Spawner); err != nil {
			return fmt.Errorf("gopf: adding the timers and daemons of %s: %w", k.GVK, err)
		}
	}
	b = b.WatchesRawSource(source.Channel(k.Wake, &ctrlhandler.EnqueueRequestForObject{}))
	b = watchRelated(b, k, mgr, sharded)
	k.Shared.Gate.WhenOpened(func() {
		if ctx := k.Shared.Context(); ctx != nil {
			k.WakeAll(ctx)
		}
	})
	if err := b.Complete(k); err != nil {
		return fmt.Errorf("gopf: starting the controller for %s: %w", k.GVK, err)
	}
	return nil
}

// watchRelated adds to b the objects the kind's level handlers own or
// watch (options of OnReconcile), each owned type once. A shard watches the
// owned objects in its own cache, as it does its own.
func watchRelated(b *builder.Builder, k *engine.KindController, mgr manager.Manager, sharded bool) *builder.Builder {
	seen := map[string]bool{}
	for _, r := range k.Level {
		for _, owned := range r.Options.Owned {
			if t := fmt.Sprintf("owns %T", owned); !seen[t] && sharded {
				seen[t] = true
				toOwner := ctrlhandler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), k.NewObject(), ctrlhandler.OnlyControllerOwner())
				b = b.WatchesRawSource(source.Kind(k.Cache, owned, toOwner))
			} else if !seen[t] {
				seen[t] = true
				b = b.Owns(owned)
			}
		}
		for _, w := range r.Options.Watched {
			b = b.Watches(w.Object, ctrlhandler.EnqueueRequestsFromMapFunc(mapToRequests(w.Map)))
		}
	}
	return b
}

// setupActivities adds the operator-level handlers, the probe endpoints and
// peering to the manager.
func setupActivities(mgr manager.Manager, reg *handlers.Registry, sh *engine.Shared, opts engine.Options) error {
	log := mgr.GetLogger().WithName("gopf")
	a := &activities{sh: sh, opts: opts, log: log}
	set := contract.SetOf(reg)
	a.startup, a.cleanup = set.Handlers(spec.KindStartup), set.Handlers(spec.KindCleanup)
	p := &prober{sh: sh, log: log, ttl: opts.ProbeCache, probes: set.Handlers(spec.KindProbe)}
	if err := mgr.Add(a); err != nil {
		return fmt.Errorf("gopf: adding the operator-level handlers: %w", err)
	}
	if len(p.probes) > 0 {
		if err := mgr.AddHealthzCheck("gopf-probes", p.Check); err != nil {
			return fmt.Errorf("gopf: adding the probes: %w", err)
		}
		if err := mgr.AddMetricsServerExtraHandler("/probes", p); err != nil {
			return fmt.Errorf("gopf: serving the probes: %w", err)
		}
	}
	if opts.Peering != nil {
		p := peering.New(mgr, sh, sh.Scope, metrics.PeeringState.WithLabelValues(opts.Peering.Name), *opts.Peering, log)
		if opts.Sharding != nil {
			p.Ring = opts.Sharding.Ring // the other shards work beside this one
		}
		if err := mgr.Add(p); err != nil {
			return fmt.Errorf("gopf: adding peering: %w", err)
		}
	}
	return nil
}

// mapToRequests adapts a Watches mapping to controller-runtime's.
func mapToRequests(fn func(ctx context.Context, obj client.Object) []types.NamespacedName) ctrlhandler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		names := fn(ctx, obj)
		out := make([]reconcile.Request, len(names))
		for i, n := range names {
			out[i] = reconcile.Request{NamespacedName: n}
		}
		return out
	}
}

// selectedOf returns the object handlers of reg that choose their kinds
// among those served (ForCategory, ForKinds), which kindsOf leaves out.
func selectedOf(reg *handlers.Registry) []*contract.Handler {
	var out []*contract.Handler
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		if r.Options.Kinds != nil {
			out = append(out, r)
		}
	}
	return out
}

// KindsOf groups the object handlers of reg by the kind they resolve to,
// kinds in the order of their first registration; newKind makes the
// controller of a kind from that first registration. A kind that is known
// (by a Go type in the scheme or ForKind) but not served by the API server
// is pending: its handlers wait for its CRD (see lazyKinds). Errors name
// the handler.
func KindsOf(reg *handlers.Registry, scheme *runtime.Scheme, mapper meta.RESTMapper,
	newKind func(gvk schema.GroupVersionKind, proto *contract.Handler) (*engine.KindController, error)) ([]*engine.KindController, []*pendingKind, error) {
	var errs []error
	byKind := map[schema.GroupVersionKind]*engine.KindController{}
	waiting := map[schema.GroupVersionKind]*pendingKind{}
	var order []*engine.KindController
	var pending []*pendingKind
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		if r.Options.Kinds != nil {
			continue // see selectedOf
		}
		gvk, _, err := spec.ResolveKind(r, scheme, mapper)
		if err != nil && meta.IsNoMatchError(err) && !gvk.Empty() {
			p, ok := waiting[gvk]
			if !ok {
				p = &pendingKind{gvk: gvk}
				waiting[gvk] = p
				pending = append(pending, p)
			}
			p.handlers = append(p.handlers, r)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
			continue
		}
		kc, ok := byKind[gvk]
		if !ok {
			if kc, err = newKind(gvk, r); err != nil {
				errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
				continue
			}
			byKind[gvk] = kc
			order = append(order, kc)
		}
		kc.Add(r)
	}
	return order, pending, errors.Join(errs...)
}
