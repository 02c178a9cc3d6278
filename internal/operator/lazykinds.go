package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/logs"
)

// A lazy kind is a kind with handlers that the API server did not serve
// when Setup ran: its CRD was not installed yet. As Kopf does, gopf waits
// for it instead of failing: lazyKinds watches CustomResourceDefinitions
// (metadata only, with an informer of its own outside the manager's cache,
// which may be limited to namespaces: one watch for all of them, no
// polling) and, after any change of one, asks discovery about the
// group-versions of the kinds it waits for. A kind that is served gets its
// controller, watcher and spawner, run under a context of its own; a kind
// that is no longer served (its CRD was deleted) has them stopped and its
// informer removed from the manager's cache, so that no watch keeps failing
// against a resource that is gone. A CRD created again starts the kind
// again, with a fresh controller.
//
// Handlers with a kind selector (ForCategory, ForKinds) are run the same
// way: after any change of a CRD, lazyKinds asks discovery for the
// preferred version of every served kind that can be listed and watched,
// and each kind a selector chooses, unless the registry has handlers of its
// own for it, becomes a lazy kind with the handlers that chose it. A kind
// no longer chosen or served is stopped; one chosen by other handlers than
// before is restarted with them. A group whose discovery failed keeps its
// kinds as they were.

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// pendingKind is a kind whose handlers wait for the API server to serve it.
type pendingKind struct {
	gvk      schema.GroupVersionKind
	handlers []*contract.Handler // in registration order; the first decides the Go type
}

// lazyKinds runs the lazy kinds of one registry. It is a Runnable on the
// manager; like controllers, it needs the leader lock.
type lazyKinds struct {
	mgr   manager.Manager
	disco discovery.DiscoveryInterface
	opts  engine.Options
	sh    *engine.Shared
	kinds []*lazyKind
	// selected are the handlers with a kind selector; explicit the kinds
	// with handlers of their own, which selectors leave alone; chosen the
	// kinds the selectors chose, guarded by mu (the gate reads it).
	selected []*contract.Handler
	explicit map[schema.GroupKind]bool
	mu       sync.Mutex
	chosen   map[schema.GroupVersionKind]*lazyKind
	log      logr.Logger
	// minPeriod is the least time between two rounds of discovery, so that
	// a burst of CRD changes costs one round; retry is the first delay after
	// a discovery error, doubled up to maxRetry.
	minPeriod, retry, maxRetry time.Duration

	signal chan struct{} // a CRD changed: look again
}

// lazyKind is one kind that may come and go.
type lazyKind struct {
	pendingKind
	mu      sync.Mutex
	running *runningKind // nil while the kind is not served
}

// runningKind is a lazy kind while it is served.
type runningKind struct {
	kc     *engine.KindController
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newLazyKinds(mgr manager.Manager, disco discovery.DiscoveryInterface, pending []*pendingKind, selected []*contract.Handler,
	explicit map[schema.GroupKind]bool, opts engine.Options, sh *engine.Shared) *lazyKinds {
	l := &lazyKinds{mgr: mgr, disco: disco, opts: opts, sh: sh, log: mgr.GetLogger().WithName("gopf").WithName("kinds"),
		selected: selected, explicit: explicit, chosen: map[schema.GroupVersionKind]*lazyKind{},
		minPeriod: time.Second, retry: 5 * time.Second, maxRetry: 5 * time.Minute, signal: make(chan struct{}, 1)}
	for _, p := range pending {
		l.kinds = append(l.kinds, &lazyKind{pendingKind: *p})
		l.log.Info("kind is not served by the API server yet; its handlers start when its CRD is established", "kind", p.gvk.String())
	}
	sh.Gate.WhenOpened(l.wakeAll)
	return l
}

// poke asks for another look at the kinds, without blocking.
func (l *lazyKinds) poke() {
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// Start watches CRDs and starts and stops the lazy kinds until ctx ends;
// then it stops every lazy kind and waits for them.
func (l *lazyKinds) Start(ctx context.Context) error {
	meta, err := metadata.NewForConfig(l.mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("gopf: watching CustomResourceDefinitions for kinds not served yet: %w", err)
	}
	inf := metadatainformer.NewFilteredMetadataInformer(meta, crdResource, metav1.NamespaceAll, 0, toolscache.Indexers{}, nil).Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { l.poke() },
		UpdateFunc: func(any, any) { l.poke() },
		DeleteFunc: func(any) { l.poke() },
	}); err != nil {
		return fmt.Errorf("gopf: watching CustomResourceDefinitions: %w", err)
	}
	var informing sync.WaitGroup
	informing.Add(1)
	go func() { defer informing.Done(); inf.RunWithContext(ctx) }()
	defer informing.Wait()
	defer l.stopAll()

	l.poke()
	delay := l.retry
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.signal:
		}
		if err := l.resolve(ctx); err != nil {
			l.log.Error(err, "asking the API server which kinds it serves; trying again", "retryIn", delay)
			t := time.NewTimer(delay)
			delay = min(2*delay, l.maxRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
				l.poke()
			}
			continue
		}
		delay = l.retry
		t := time.NewTimer(l.minPeriod) // coalesce a burst of CRD changes
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// resolve asks discovery once per group-version of the lazy kinds which of
// them are served, and starts or stops each accordingly.
func (l *lazyKinds) resolve(ctx context.Context) error {
	served := map[schema.GroupVersion]map[string]bool{}
	var errs []error
	for _, lk := range l.kinds {
		gv := lk.gvk.GroupVersion()
		kinds, ok := served[gv]
		if !ok {
			list, err := l.disco.ServerResourcesForGroupVersion(gv.String())
			switch {
			case apierrors.IsNotFound(err):
				kinds = map[string]bool{}
			case err != nil:
				errs = append(errs, fmt.Errorf("discovering %s: %w", gv, err))
				continue // neither start nor stop on a guess
			default:
				kinds = map[string]bool{}
				for _, r := range list.APIResources {
					kinds[r.Kind] = true
				}
			}
			served[gv] = kinds
		}
		if kinds[lk.gvk.Kind] {
			if err := l.start(ctx, lk); err != nil {
				errs = append(errs, err)
			}
		} else {
			l.stop(lk, "its CRD was removed")
		}
	}
	if len(l.selected) > 0 {
		if err := l.resolveSelected(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resolveSelected asks discovery for the served kinds, and starts, stops or
// restarts the kinds the selectors choose.
func (l *lazyKinds) resolveSelected(ctx context.Context) error {
	lists, err := l.disco.ServerPreferredResources()
	var failed map[schema.GroupVersion]error
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return fmt.Errorf("discovering the served kinds: %w", err)
		}
		failed = partial.Groups
	}
	wanted := choose(lists, l.selected, l.explicit)
	l.mu.Lock()
	running := maps.Clone(l.chosen)
	l.mu.Unlock()
	for gvk, lk := range running {
		if _, unknown := failed[gvk.GroupVersion()]; unknown {
			continue
		}
		if hs, ok := wanted[gvk]; ok && slices.Equal(hs, lk.handlers) {
			continue
		}
		l.stop(lk, "no handler chooses it any more, or it is not served")
		l.mu.Lock()
		delete(l.chosen, gvk)
		l.mu.Unlock()
	}
	var errs []error
	for _, gvk := range slices.SortedFunc(maps.Keys(wanted), func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) }) {
		l.mu.Lock()
		lk := l.chosen[gvk]
		if lk == nil {
			lk = &lazyKind{pendingKind: pendingKind{gvk: gvk, handlers: wanted[gvk]}}
			l.chosen[gvk] = lk
		}
		l.mu.Unlock()
		if err := l.start(ctx, lk); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// choose returns the kinds among the served ones (lists, as discovery
// gives them) that the selectors of the handlers selected choose, each
// with the handlers that chose it in their order. Subresources, kinds that
// cannot be listed and watched, and the explicit kinds are never chosen.
func choose(lists []*metav1.APIResourceList, selected []*contract.Handler, explicit map[schema.GroupKind]bool) map[schema.GroupVersionKind][]*contract.Handler {
	wanted := map[schema.GroupVersionKind][]*contract.Handler{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			if explicit[gvk.GroupKind()] {
				continue
			}
			for _, h := range selected {
				if h.Options.Kinds.Selects(gvk, r.Categories) {
					wanted[gvk] = append(wanted[gvk], h)
				}
			}
		}
	}
	return wanted
}

// start starts a served lazy kind, unless it runs.
func (l *lazyKinds) start(ctx context.Context, lk *lazyKind) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.running != nil {
		return nil
	}
	kc, err := engine.NewKindController(l.mgr, l.disco, lk.gvk, lk.handlers[0], l.opts, l.sh)
	if err != nil {
		return fmt.Errorf("preparing %s: %w", lk.gvk, err)
	}
	for _, r := range lk.handlers {
		kc.Add(r)
	}
	run := &runningKind{kc: kc}
	run.ctx, run.cancel = context.WithCancel(ctx)
	runnables, err := l.runnables(kc)
	if err != nil {
		run.cancel()
		return err
	}
	l.launch(lk, run, runnables)
	lk.running = run
	l.log.Info("kind is served now; its handlers start", "kind", lk.gvk.String())
	return nil
}

// runnables are what runs a lazy kind's handlers, as Setup adds them to the
// manager for a kind served from the start: the watcher of its event and
// index handlers, the spawner of its timers and daemons, and the
// controller of its change and level handlers, timers and daemons.
func (l *lazyKinds) runnables(kc *engine.KindController) ([]func(context.Context) error, error) {
	var out []func(context.Context) error
	if len(kc.Events)+len(kc.Indexes) > 0 {
		out = append(out, l.watcherOf(kc))
	}
	if len(kc.Change)+len(kc.Level)+len(kc.Spawned) > 0 {
		if len(kc.Spawned) > 0 {
			kc.Spawner = kc.NewSpawner(l.opts.MaxConcurrentReconciles)
			out = append(out, kc.Spawner.Start)
		}
		c, err := unmanagedController(kc, l.mgr, l.opts)
		if err != nil {
			return nil, err
		}
		out = append(out, c.Start)
	}
	return out, nil
}

// watcherOf returns the run of kc's watcher. A watcher that feeds indexes
// counts, until it stops, among those whose first list the indexes wait for.
func (l *lazyKinds) watcherOf(kc *engine.KindController) func(context.Context) error {
	w := &watcher{k: kc, cache: kc.Cache, events: kc.Events, indexes: kc.Indexes}
	if len(kc.Indexes) == 0 {
		return w.Start
	}
	l.sh.Mu.Lock()
	l.sh.Watchers = append(l.sh.Watchers, w)
	l.sh.Mu.Unlock()
	return func(ctx context.Context) error {
		defer l.forgetWatcher(w)
		return w.Start(ctx)
	}
}

// launch runs a lazy kind's runnables, each in its own goroutine, once the
// kind's informers are in sync: a stop before then ends the wait quietly,
// where controller-runtime's sources would log it as an error, and a kind
// whose informer does not sync is reported once, here. A kind that does
// not start, or one of whose runnables fails, is stopped, and the kinds
// are looked at again.
func (l *lazyKinds) launch(lk *lazyKind, run *runningKind, runnables []func(context.Context) error) {
	run.done.Add(1)
	go func() {
		defer run.done.Done()
		if err := l.syncInformers(run.ctx, run.kc); err != nil {
			if run.ctx.Err() == nil {
				l.log.Error(err, "a lazy kind did not start; looking again", "kind", lk.gvk.String())
				run.cancel()
				l.poke()
			}
			return
		}
		for _, fn := range runnables {
			run.done.Add(1)
			go func() {
				defer run.done.Done()
				if err := fn(run.ctx); err != nil && run.ctx.Err() == nil {
					l.log.Error(err, "a lazy kind stopped", "kind", lk.gvk.String())
					run.cancel()
					l.poke()
				}
			}()
		}
	}()
}

// syncInformers waits until the informers of kc's controller are in
// sync, for as long as the manager's controllers wait for theirs.
func (l *lazyKinds) syncInformers(ctx context.Context, kc *engine.KindController) error {
	timeout := l.mgr.GetControllerOptions().CacheSyncTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute // controller-runtime's default
	}
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	own, watched := informed(kc)
	for _, obj := range own {
		if _, err := kc.Cache.GetInformer(syncCtx, obj); err != nil {
			return fmt.Errorf("waiting for the informer of %T: %w", obj, err)
		}
	}
	for _, obj := range watched {
		if _, err := l.mgr.GetCache().GetInformer(syncCtx, obj); err != nil {
			return fmt.Errorf("waiting for the informer of %T: %w", obj, err)
		}
	}
	return nil
}

// stop stops a lazy kind if it runs, waits for its goroutines and removes
// its informer from the manager's cache.
func (l *lazyKinds) stop(lk *lazyKind, why string) {
	lk.mu.Lock()
	run := lk.running
	lk.running = nil
	lk.mu.Unlock()
	if run == nil {
		return
	}
	run.cancel()
	run.done.Wait()
	if err := run.kc.Cache.RemoveInformer(context.Background(), run.kc.NewObject()); err != nil {
		l.log.Error(err, "removing the informer of a kind that is gone", "kind", lk.gvk.String())
	}
	l.log.Info("kind is not served any more; its handlers stopped", "kind", lk.gvk.String(), "reason", why)
}

// stopAll stops every lazy kind, as the manager stops.
func (l *lazyKinds) stopAll() {
	for _, lk := range l.all() {
		l.stop(lk, "the operator stops")
	}
}

// all returns the lazy kinds: those waited for, then those chosen.
func (l *lazyKinds) all() []*lazyKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.kinds)
	for _, lk := range l.chosen {
		out = append(out, lk)
	}
	return out
}

// wakeAll reconciles every object of the running lazy kinds, when the gate
// opens again.
func (l *lazyKinds) wakeAll() {
	for _, lk := range l.all() {
		lk.wakeAll()
	}
}

// forgetWatcher drops a stopped kind's watcher from those whose indexes
// must be ready.
func (l *lazyKinds) forgetWatcher(w *watcher) {
	l.sh.Mu.Lock()
	defer l.sh.Mu.Unlock()
	l.sh.Watchers = slices.DeleteFunc(l.sh.Watchers, func(x engine.IndexFeeder) bool { return x == w })
}

// wakeAll reconciles every object of the kind when the gate opens again,
// if the kind runs.
func (lk *lazyKind) wakeAll() {
	lk.mu.Lock()
	run := lk.running
	lk.mu.Unlock()
	if run != nil && run.ctx.Err() == nil {
		run.kc.WakeAll(run.ctx)
	}
}

// reconcileLog is the LogConstructor of k's controller: the values of
// controller-runtime's own, added only when a reconcile writes a line.
func reconcileLog(mgr manager.Manager, k *engine.KindController) func(*reconcile.Request) logr.Logger {
	base := mgr.GetLogger().WithValues("controller", k.Name, "controllerGroup", k.GVK.Group, "controllerKind", k.GVK.Kind)
	return logs.Reconciles(base, k.GVK.Kind)
}

// unmanagedController builds the kind's controller-runtime controller with
// the same sources as start's builder, for a caller that starts and stops
// it itself. Its name may repeat (a kind whose CRD came back).
func unmanagedController(k *engine.KindController, mgr manager.Manager, opts engine.Options) (controller.Controller, error) {
	copts := controller.Options{
		Reconciler:              k,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		SkipNameValidation:      ptr.To(true),
		LogConstructor:          reconcileLog(mgr, k),
	}
	copts.DefaultFromConfig(mgr.GetControllerOptions())
	c, err := controller.NewUnmanaged(k.Name, copts)
	if err != nil {
		return nil, fmt.Errorf("gopf: the controller for %s: %w", k.GVK, err)
	}
	srcs := []source.Source{
		quietSync{source.Kind(k.Cache, k.NewObject(), &ctrlhandler.TypedEnqueueRequestForObject[client.Object]{})},
		source.Channel(k.Wake, &ctrlhandler.EnqueueRequestForObject{}),
	}
	for _, r := range k.Level {
		for _, owned := range r.Options.Owned {
			toOwner := ctrlhandler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), k.NewObject(), ctrlhandler.OnlyControllerOwner())
			srcs = append(srcs, quietSync{source.Kind(k.Cache, owned, toOwner)})
		}
		for _, w := range r.Options.Watched {
			srcs = append(srcs, quietSync{source.Kind(mgr.GetCache(), w.Object, ctrlhandler.EnqueueRequestsFromMapFunc(mapToRequests(w.Map)))})
		}
	}
	for _, s := range srcs {
		if err := c.Watch(s); err != nil {
			return nil, fmt.Errorf("gopf: watching for %s: %w", k.GVK, err)
		}
	}
	return c, nil
}

// informed returns an object of each kind whose informer the kind's
// controller watches: own are the kind's and those its level handlers own
// (in the kind's cache), watched those they watch (in the manager's).
func informed(k *engine.KindController) (own, watched []client.Object) {
	own = []client.Object{k.NewObject()}
	for _, r := range k.Level {
		own = append(own, r.Options.Owned...)
		for _, w := range r.Options.Watched {
			watched = append(watched, w.Object)
		}
	}
	return own, watched
}

// quietSync is a source of a lazy kind's controller whose wait for its
// informer ends without an error when the kind stops meanwhile (its
// context is cancelled), as it does when the operator stops during a
// start; controller-runtime would log each such wait as an error. A wait
// that times out is still an error.
type quietSync struct {
	source.SyncingSource
}

// WaitForSync waits as the source does, and reports no error once ctx is
// cancelled.
func (q quietSync) WaitForSync(ctx context.Context) error {
	err := q.SyncingSource.WaitForSync(ctx)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return err
}

// String names the source as the source does, for the controller's logs.
func (q quietSync) String() string { return fmt.Sprint(q.SyncingSource) }
