package assign

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gopf-dev/gopf/internal/shard"
)

// arrivalWorkers is how many objects the assigner's watches may have
// patches in flight for at once. With one, the round trip of a patch (tens
// of milliseconds on a busy API server) and not the token bucket would
// bound how fast new objects get their shard: below 50 a second in the
// bench's latency runs on two loaded cores.
const arrivalWorkers = 4

// watchUnassigned starts, in wg, a watch of the unassigned objects of
// every kind of the ring in the assigner's namespaces, and arrivalWorkers
// workers that assign each as it arrives, until ctx is done. It returns once each
// watch knows where it starts (or failed to learn it, then the watch
// learns it again later), so that a pass begun after it misses nothing
// the watches do not see.
//
// A watch selects on the shard label's absence, so the API server sends
// it only objects without a shard: new ones, and those whose shard let go
// of them after a drain. An object leaves the watch (a DELETED event) when
// it gets its label. It costs the assigner only the objects that wait for
// their shard; it keeps none of them once they have one.
func (a *Assigner) watchUnassigned(ctx context.Context, log logr.Logger, view *View, wg *sync.WaitGroup) {
	b := newBacklog(a.opts.Kinds)
	for _, k := range a.opts.Kinds {
		for _, objects := range a.resources(k) {
			rv, err := startOf(ctx, objects)
			if err != nil {
				log.Error(err, "watching unassigned objects: will try again", "kind", k)
			}
			wg.Go(func() { a.watch(ctx, log, k, objects, rv, b) })
		}
	}
	for range arrivalWorkers {
		wg.Go(func() { a.assignArrivals(ctx, log, view, b) })
	}
}

// startOf returns the resourceVersion of objects now, where a watch
// starts that misses nothing created from now on. It lists one object,
// without a selector, so that the API server neither sends every
// unassigned object (as a list at resourceVersion=0 would, which ignores
// the limit) nor scans every object for one that matches.
func startOf(ctx context.Context, objects metadata.ResourceInterface) (string, error) {
	list, err := objects.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

// watch follows the unassigned objects of k in objects from
// resourceVersion rv into b until ctx is done. A watch that ends (its
// resourceVersion expired, the API server refused it) starts over from
// now after a pause that doubles, up to ResyncPeriod, while watches
// deliver nothing; what was created meanwhile waits for the next pass.
func (a *Assigner) watch(ctx context.Context, log logr.Logger, k Kind, objects metadata.ResourceInterface, rv string, b *backlog) {
	pause := a.opts.RetryPeriod
	for {
		if rv != "" && a.follow(ctx, log, k, objects, rv, b) {
			pause = a.opts.RetryPeriod
		}
		select {
		case <-ctx.Done():
			return
		case <-a.opts.Clock.After(pause):
		}
		pause = min(2*pause, a.opts.ResyncPeriod)
		var err error
		if rv, err = startOf(ctx, objects); err != nil && ctx.Err() == nil {
			log.Error(err, "watching unassigned objects: will try again", "kind", k)
		}
	}
}

// follow runs one watch of the unassigned objects of k from rv, which
// client-go's RetryWatcher resumes over the API server's timeouts, until
// it ends, and reports whether it delivered any object.
func (a *Assigner) follow(ctx context.Context, log logr.Logger, k Kind, objects metadata.ResourceInterface, rv string, b *backlog) bool {
	sel := unassigned(a.opts.Ring)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return objects.Watch(ctx, o)
		},
	})
	if err != nil {
		log.Error(err, "watching unassigned objects", "kind", k)
		return false
	}
	defer func() {
		rw.Stop()
		<-rw.Done()
	}()
	delivered := false
	for ev := range rw.ResultChan() {
		obj, isObj := ev.Object.(*metav1.PartialObjectMetadata)
		switch {
		case ev.Type == watch.Error:
			log.Error(apierrors.FromObject(ev.Object), "watching unassigned objects: starting over", "kind", k)
		case !isObj:
		case ev.Type == watch.Deleted: // assigned, or gone
			b.forget(k, obj)
		default:
			b.offer(k, obj)
			delivered = true
		}
	}
	return delivered
}

// unassigned is the label selector of the objects without a shard of
// ring: the label's absence. New validated the ring, and with it the
// label's key.
func unassigned(ring string) string { return "!" + shard.ShardLabel(ring) }

// assignArrivals assigns the objects that arrive in b, one at a time,
// until ctx is done: one of arrivalWorkers.
func (a *Assigner) assignArrivals(ctx context.Context, log logr.Logger, view *View, b *backlog) {
	for {
		next, ok := b.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-b.arrived:
			}
			continue
		}
		a.assignArrival(ctx, log, view, next)
	}
}

// assignArrival gives an unassigned object the ring's choice of shard,
// as a pass would (Decide), at most RescuesPerSecond with the passes'
// rescues. With no shard available, or while the ring's choice has
// missed its renewal (Defer), it leaves the object: the pass that
// follows the first shard's arrival, or the claim of the unready one,
// assigns it (if the unready shard renews instead, the next resync does).
// A refused patch is not tried again: the object changed or is gone, and
// a change that leaves it unassigned arrives again.
func (a *Assigner) assignArrival(ctx context.Context, log logr.Logger, view *View, o arrival) {
	decide := func() Decision {
		shards := view.Shards(a.opts.Clock.Now())
		return Decide(o.obj, a.opts.Ring, shards.Ring().ShardFor(o.key), stateIn(shards))
	}
	if decide().Action != Assign {
		return
	}
	if err := a.rescueBucket.Wait(ctx); err != nil {
		return
	}
	d := decide() // the ring may have changed while waiting
	if d.Action != Assign {
		return
	}
	err := a.patch(ctx, o.kind, o.obj, d)
	switch {
	case err == nil:
		log.V(1).Info("assigned a new object", "kind", o.kind, "namespace", o.obj.Namespace, "name", o.obj.Name, "shard", d.Shard)
	case ctx.Err() != nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		log.Error(err, "assigning a new object: the next pass will", "kind", o.kind)
	}
}

// stateIn returns the state of a shard of shards by name: Unknown for
// none of them.
func stateIn(shards shard.Shards) func(string) shard.State {
	return func(name string) shard.State {
		for _, s := range shards {
			if s.Name == name {
				return s.State
			}
		}
		return shard.Unknown
	}
}

// backlog holds the unassigned objects that the watches delivered and the
// assigner has not looked at yet, in the order they arrived, each in its
// latest version. It is safe for concurrent use.
type backlog struct {
	kinds   []Kind
	arrived chan struct{} // holds a token after an offer
	mu      sync.Mutex
	order   []ref           // may hold refs since forgotten
	latest  map[ref]arrival // by object
}

// ref names an object of the ring.
type ref struct {
	kind            Kind
	namespace, name string
}

// arrival is an unassigned object, its kind and its key on the ring.
type arrival struct {
	kind Kind
	obj  *metav1.PartialObjectMetadata
	key  string
}

func newBacklog(kinds []Kind) *backlog {
	return &backlog{kinds: kinds, arrived: make(chan struct{}, 1), latest: map[ref]arrival{}}
}

// offer puts obj, of kind k, in the backlog, or replaces the version
// there. It keeps only what deciding and patching obj need, and leaves
// out objects that the assigner does not assign (keyOf).
func (b *backlog) offer(k Kind, obj *metav1.PartialObjectMetadata) {
	key, ok, _ := keyOf(b.kinds, k, obj)
	if !ok {
		return
	}
	obj.ManagedFields, obj.Annotations = nil, nil
	r := ref{kind: k, namespace: obj.Namespace, name: obj.Name}
	b.mu.Lock()
	if _, queued := b.latest[r]; !queued {
		b.order = append(b.order, r)
	}
	b.latest[r] = arrival{kind: k, obj: obj, key: key}
	b.mu.Unlock()
	b.signal()
}

// forget takes obj, of kind k, out of the backlog.
func (b *backlog) forget(k Kind, obj *metav1.PartialObjectMetadata) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.latest, ref{kind: k, namespace: obj.Namespace, name: obj.Name})
}

// next takes the object that arrived first out of the backlog, and
// reports false if there is none. If others wait, it passes the token of
// arrived on to another worker: one offer's token wakes one worker, and
// a burst of offers leaves one token.
func (b *backlog) next() (arrival, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.order) > 0 {
		r := b.order[0]
		b.order = b.order[1:]
		if o, ok := b.latest[r]; ok {
			delete(b.latest, r)
			if len(b.latest) > 0 {
				b.signal()
			}
			return o, true
		}
	}
	return arrival{}, false
}

// signal leaves a token in arrived, unless one is there.
func (b *backlog) signal() {
	select {
	case b.arrived <- struct{}{}:
	default:
	}
}
