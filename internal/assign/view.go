package assign

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gopf-dev/gopf/internal/shard"
)

// View is a replica's view of a ring's membership: it watches the ring's
// Leases (a few small objects, one per shard) and tells the shards' states
// and the Ring of the available ones at any moment. The assigner runs one
// while it leads; an admission webhook needs one on every replica to call
// ShardFor. A View is a manager.Runnable that needs no leader election,
// and safe for concurrent use once started.
type View struct {
	ring     string
	informer cache.SharedIndexInformer
	changed  chan struct{} // holds a token after a Lease changed
	gen      atomic.Uint64 // counts the Lease events
	started  sync.Once
	last     atomic.Pointer[snapshot]
}

// snapshot is what a View last said of its shards, and for how long it
// holds: until a Lease changes (gen) or a shard's state changes with time
// (until). A webhook asks for the ring at every create: built anew each
// time, the ring and the Leases' copies were most of what the replica
// serving the webhook allocated (17 KiB a create with 4 shards, in make
// bench-sharded's profiles), and their garbage raised its peak RSS over
// the other replicas'.
type snapshot struct {
	gen         uint64
	from, until time.Time // until is zero if no state changes with time
	shards      shard.Shards
	ring        *shard.Ring
}

// holds reports whether s is what the view says at now, with gen Lease
// events so far.
func (s *snapshot) holds(gen uint64, now time.Time) bool {
	return s.gen == gen && !now.Before(s.from) && (s.until.IsZero() || now.Before(s.until))
}

// NewView returns the view of ring, whose Leases live in namespace and are
// read through leases (a client straight to the API server).
func NewView(leases coordinationv1client.LeasesGetter, namespace, ring string) (*View, error) {
	sel, err := shard.RingSelector(ring)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		return nil, fmt.Errorf("view of ring %q: the Leases' namespace is empty", ring)
	}
	if leases == nil {
		return nil, fmt.Errorf("view of ring %q: no Lease client", ring)
	}
	selected := func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			selected(&o)
			return leases.Leases(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			selected(&o)
			return leases.Leases(namespace).Watch(ctx, o)
		},
	}
	v := &View{
		ring:     ring,
		informer: cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{}),
		changed:  make(chan struct{}, 1),
	}
	notify := func(any) {
		v.gen.Add(1)
		select {
		case v.changed <- struct{}{}:
		default:
		}
	}
	if _, err := v.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, o any) { notify(o) },
		DeleteFunc: notify,
	}); err != nil {
		return nil, fmt.Errorf("view of ring %q: %w", ring, err)
	}
	return v, nil
}

// Start watches the ring's Leases until ctx is done. A View starts once.
func (v *View) Start(ctx context.Context) error {
	err := fmt.Errorf("view of ring %q: a view starts once", v.ring)
	v.started.Do(func() {
		err = nil
		v.informer.RunWithContext(ctx)
	})
	return err
}

// NeedLeaderElection returns false: every replica may need the view.
func (*View) NeedLeaderElection() bool { return false }

// WaitForSync waits until the view has read the ring's Leases once, and
// reports whether it has (false if ctx ended first).
func (v *View) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), v.informer.HasSynced)
}

// HasSynced reports whether the view has read the ring's Leases once.
// Before that it sees no shard.
func (v *View) HasSynced() bool { return v.informer.HasSynced() }

// Shards returns what the ring's Leases say of its shards at now, in the
// order of their names.
func (v *View) Shards(now time.Time) shard.Shards { return slices.Clone(v.at(now).shards) }

// Ring returns the ring of the shards available at now: where the ring's
// objects belong.
func (v *View) Ring(now time.Time) *shard.Ring { return v.at(now).ring }

// at returns what the view says at now: the last snapshot if it still
// holds, else a new one. The generation is read before the Leases, so a
// Lease event that comes between makes the new snapshot stale at once
// rather than one that misses the event look fresh.
func (v *View) at(now time.Time) *snapshot {
	gen := v.gen.Load()
	if s := v.last.Load(); s != nil && s.holds(gen, now) {
		return s
	}
	shards := shard.ShardsOf(v.leases(), now)
	s := &snapshot{gen: gen, from: now, until: shards.Changes(), shards: shards, ring: shards.Ring()}
	v.last.Store(s)
	return s
}

// leases returns copies of the ring's Leases, sorted by name.
func (v *View) leases() []coordinationv1.Lease {
	objs := v.informer.GetStore().List()
	leases := make([]coordinationv1.Lease, 0, len(objs))
	for _, o := range objs {
		if l, ok := o.(*coordinationv1.Lease); ok {
			leases = append(leases, *l.DeepCopy())
		}
	}
	slices.SortFunc(leases, func(a, b coordinationv1.Lease) int { return cmp.Compare(a.Name, b.Name) })
	return leases
}

// Changed receives a value after a Lease of the ring changed (at most one
// waits): time to look at the shards again.
func (v *View) Changed() <-chan struct{} { return v.changed }

// generation counts the Lease events so far: a pass compares it to notice
// that the ring may have changed under it.
func (v *View) generation() uint64 { return v.gen.Load() }
