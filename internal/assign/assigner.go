package assign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gopf-dev/gopf/internal/shard"
)

// Defaults of Options.
const (
	// DefaultResyncPeriod is how often the assigner looks again when no
	// shard comes or goes (see Options.ResyncPeriod): the reference
	// sharder's period for its own resync.
	DefaultResyncPeriod = 30 * time.Second
	// DefaultDrainCheckPeriod is how soon a pass follows one that left
	// objects waiting for their shard to acknowledge a drain, so that a
	// released object waits for its new shard seconds, not a resync.
	DefaultDrainCheckPeriod = 5 * time.Second
	// DefaultDrainsPerSecond and DefaultDrainBurst bound the drains, the
	// patches that ask a live shard to let go of an object (a token bucket
	// of DefaultDrainBurst tokens refilled at DefaultDrainsPerSecond): the
	// object is handled meanwhile, so the rebalance when a shard joins can
	// take its time, and each drain costs the shard's acknowledgement and
	// an assignment besides.
	DefaultDrainsPerSecond = 100
	DefaultDrainBurst      = 100
	// DefaultRescuesPerSecond and DefaultRescueBurst bound the patches that
	// give a shard to an object that no live shard handles: one without a
	// shard, or of a shard that died. Each moves an object from no
	// handling to handling, so the bucket is larger: at 100 a second, the
	// 5,000 objects of one of two replicas killed at 10,000 objects took
	// at least 50 s to move, longer than the sharded bench's chaos run
	// leaves between two kills (30 s), and objects of dead shards piled up
	// until the run timed out. With the bucket out of the way, the API
	// server sets the pace (with rescueWorkers patches in flight: 95 a
	// second at the median on 2 loaded cores, 367 at most). The
	// reference's sharder moves them with 100 patches in flight and no
	// rate at all; these small metadata patches stay under the API
	// server's priority and fairness either way.
	DefaultRescuesPerSecond = 500
	DefaultRescueBurst      = 500
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod
	// time the assigner's own election. When its leader dies without
	// releasing the Lease (SIGKILL, a lost node), nothing is assigned and
	// no dead shard's objects move until another replica leads: a lease
	// duration and up to a retry period later. With a shard's timing
	// (shard.DefaultLeaseDuration, 15 s) that was about half the time in
	// the sharded bench's chaos run, whose kills took the leader at most
	// kills. Only gopf's replicas read this Lease, so its timing is gopf's
	// to choose, where the shards' Leases keep the reference's (its
	// sharder reads them). It costs a renewal a second instead of one every
	// 2 s.
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 5 * time.Second
	DefaultRetryPeriod   = time.Second
)

// Options configure an Assigner.
type Options struct {
	// Ring names the ring whose objects the assigner assigns
	// (shard.ValidateRing). Required.
	Ring string
	// Namespace is where the ring's Leases live, and the assigner's own
	// (named Ring + "-assigner"). Required.
	Namespace string
	// Kinds are the kinds of the ring: at least one main kind, and any
	// controlled kinds whose objects follow their controllers. Required.
	Kinds []Kind
	// Namespaces, if any, are the only namespaces whose objects the
	// assigner lists: those the operator works in. None means every
	// namespace (and cluster-scoped kinds are always listed whole).
	Namespaces []string
	// Metadata lists and patches the ring's objects, metadata only. A
	// client straight to the API server (metadata.NewForConfig). Required.
	Metadata metadata.Interface
	// Leases reads the ring's Leases, claims uncertain shards' Leases and
	// holds the assigner's own: a client straight to the API server
	// (kubernetes.NewForConfig(cfg).CoordinationV1()). Required.
	Leases coordinationv1client.LeasesGetter
	// Shard names this replica's shard, which names it in the assigner's
	// Lease (see holderOf). Zero means the host name, as for a shard
	// (shard.MemberOptions.Shard).
	Shard string
	// ResyncPeriod is how often the assigner looks again when the ring
	// does not change: at the objects without an available shard while the
	// ring is settled, at every object every tenth time (see cadence).
	// Zero means DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// DrainCheckPeriod is how soon a pass follows one that left objects
	// draining. Zero means DefaultDrainCheckPeriod.
	DrainCheckPeriod time.Duration
	// DrainsPerSecond and DrainBurst bound the drains (a token bucket).
	// Zero means DefaultDrainsPerSecond and DefaultDrainBurst.
	DrainsPerSecond float32
	DrainBurst      int
	// RescuesPerSecond and RescueBurst bound the assignments of objects
	// that no live shard handles (a token bucket of their own). Zero means
	// DefaultRescuesPerSecond and DefaultRescueBurst.
	RescuesPerSecond float32
	RescueBurst      int
	// PageSize, if positive, lists each kind in pages of that many objects,
	// read consistently (from the API server's cache where it can serve
	// pages, from etcd otherwise). Zero lists each kind in one request with
	// resourceVersion=0, served from the API server's watch cache, which
	// ignores a limit: the cheapest read for the server, at the price of a
	// response as large as the kind's metadata.
	PageSize int64
	// LeaseDuration, RenewDeadline and RetryPeriod time the assigner's
	// election and how often it retries one. Zero means
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Log receives one line per pass and per election event. The zero
	// value means the logger of Start's context.
	Log logr.Logger
	// OnPass, if set, is called after each pass with what it did: for
	// metrics, and for tests.
	OnPass func(Counts)
	// Clock tells the time of the Leases' states and the periods. Zero
	// means the real clock.
	Clock clock.Clock
}

// Assigner assigns the objects of a ring to its shards where no other
// assigner does (see the package's documentation). It is a
// manager.Runnable that runs its own election among the replicas, so it
// does not need the manager's.
type Assigner struct {
	opts         Options
	holder       string // this process in the assigner's Lease
	leading      atomic.Bool
	drainBucket  flowcontrol.RateLimiter // DrainsPerSecond
	rescueBucket flowcontrol.RateLimiter // RescuesPerSecond
	resume       mark                    // where the leader's rescue got to; its goroutine's
	started      sync.Once
}

// New returns the assigner of opts, or an error naming what is wrong with
// them.
func New(opts Options) (*Assigner, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Assigner{
		opts:         opts,
		holder:       holderOf(opts.Shard),
		drainBucket:  flowcontrol.NewTokenBucketRateLimiterWithClock(opts.DrainsPerSecond, opts.DrainBurst, opts.Clock),
		rescueBucket: flowcontrol.NewTokenBucketRateLimiterWithClock(opts.RescuesPerSecond, opts.RescueBurst, opts.Clock),
	}, nil
}

// holderOf returns the holder identity of the replica of shardName in the
// assigner's Lease: the shard's name, so that the Lease tells which shard
// assigns, and a random suffix unique to the process. client-go's elector
// takes a Lease whose holder is its own identity for its own and renews
// it: two processes with one shard name (a restarted replica, or two
// replicas given the same --shard-name by mistake) would both lead and
// both write, where with the suffix the election keeps them apart.
func holderOf(shardName string) string { return shardName + "_" + utilrand.String(5) }

// defaults fills in the zero values of o and checks the rest.
func (o *Options) defaults() error {
	if err := shard.ValidateRing(o.Ring); err != nil {
		return fmt.Errorf("assigner: %w", err)
	}
	problem := func(format string, args ...any) error {
		return fmt.Errorf("assigner of ring %q: "+format, append([]any{o.Ring}, args...)...)
	}
	switch {
	case o.Namespace == "":
		return problem("the Leases' namespace is empty")
	case o.Metadata == nil:
		return problem("no metadata client")
	case o.Leases == nil:
		return problem("no Lease client")
	case !slices.ContainsFunc(o.Kinds, func(k Kind) bool { return !k.Controlled }):
		return problem("no main kind among the kinds %v", o.Kinds)
	}
	for i, k := range o.Kinds {
		if k.Resource.Resource == "" || k.Resource.Version == "" || k.GroupKind.Kind == "" {
			return problem("kind %d (%v) needs its resource, version and kind", i, k)
		}
		if k.Resource.Group != k.GroupKind.Group {
			return problem("kind %v: resource group %q and kind group %q differ", k, k.Resource.Group, k.GroupKind.Group)
		}
		if slices.ContainsFunc(o.Kinds[:i], func(p Kind) bool { return p.GroupKind == k.GroupKind }) {
			return problem("kind %s is given twice", k.GroupKind)
		}
	}
	if o.Shard == "" {
		host, err := os.Hostname()
		if err != nil {
			return problem("naming the replica after the host: %w", err)
		}
		o.Shard = host
	}
	o.ResyncPeriod = orDefault(o.ResyncPeriod, DefaultResyncPeriod)
	o.DrainCheckPeriod = orDefault(o.DrainCheckPeriod, DefaultDrainCheckPeriod)
	o.LeaseDuration = orDefault(o.LeaseDuration, DefaultLeaseDuration)
	o.RenewDeadline = orDefault(o.RenewDeadline, DefaultRenewDeadline)
	o.RetryPeriod = orDefault(o.RetryPeriod, DefaultRetryPeriod)
	o.DrainsPerSecond, o.DrainBurst = orDefaultRate(o.DrainsPerSecond, o.DrainBurst, DefaultDrainsPerSecond, DefaultDrainBurst)
	o.RescuesPerSecond, o.RescueBurst = orDefaultRate(o.RescuesPerSecond, o.RescueBurst, DefaultRescuesPerSecond, DefaultRescueBurst)
	if o.ResyncPeriod < 0 || o.DrainCheckPeriod < 0 || o.DrainsPerSecond < 0 || o.DrainBurst < 0 ||
		o.RescuesPerSecond < 0 || o.RescueBurst < 0 || o.PageSize < 0 {
		return problem("periods, write rates and page size cannot be negative")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return nil
}

// orDefault returns d, or def if d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// orDefaultRate returns rate and burst, each replaced by its default if
// zero.
func orDefaultRate(rate float32, burst int, defRate float32, defBurst int) (float32, int) {
	if rate == 0 {
		rate = defRate
	}
	if burst == 0 {
		burst = defBurst
	}
	return rate, burst
}

// Start runs for the assigner's election until ctx is done, and assigns
// while it leads. It releases its Lease when ctx is done, so that another
// replica takes over at once, and returns nil. Having lost its Lease, it
// stops assigning and runs for election again. An Assigner starts once.
func (a *Assigner) Start(ctx context.Context) error {
	err := fmt.Errorf("assigner of ring %q: an assigner starts once", a.opts.Ring)
	a.started.Do(func() { err = a.run(ctx) })
	return err
}

// run runs elections until ctx is done.
func (a *Assigner) run(ctx context.Context) error {
	log := a.opts.Log
	if log.GetSink() == nil {
		log = logf.FromContext(ctx)
	}
	log = log.WithValues("ring", a.opts.Ring, "assigner", a.holder)
	defer a.drainBucket.Stop()
	defer a.rescueBucket.Stop()
	for {
		if err := a.elect(ctx, log); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.opts.Clock.After(a.opts.RetryPeriod):
			log.Info("not leading: running for election again")
		}
	}
}

// elect runs one election: it waits for the assigner's Lease, assigns
// while it holds it, and returns when ctx is done (having stopped
// assigning and then released the Lease) or the Lease is lost.
//
// client-go's elector runs the leader's work in a goroutine of its own
// and releases the Lease as soon as its context ends, without waiting for
// the work to stop. Here the work runs in the caller's goroutine, and the
// elector's context ends only after the work stopped: Start returns with
// nothing left running, and the Lease is released only when this replica
// no longer writes.
func (a *Assigner) elect(ctx context.Context, log logr.Logger) error {
	won := make(chan context.Context, 1) // the elector's goroutine never blocks
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Name: a.opts.Ring + "-assigner",
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: a.opts.Namespace, Name: a.opts.Ring + "-assigner"},
			Client:     a.opts.Leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: a.holder},
		},
		LeaseDuration:   a.opts.LeaseDuration,
		RenewDeadline:   a.opts.RenewDeadline,
		RetryPeriod:     a.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(held context.Context) { won <- held },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("assigner of ring %q: %w", a.opts.Ring, err)
	}
	electing, stopElecting := context.WithCancel(logr.NewContext(context.WithoutCancel(ctx), log))
	defer stopElecting()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		elector.Run(electing)
	}()
	select {
	case held := <-won:
		leading, stop := context.WithCancel(held)
		unhook := context.AfterFunc(ctx, stop)
		a.leading.Store(true)
		log.Info("leading: assigning the ring's objects")
		if err := a.lead(leading, log); err != nil && leading.Err() == nil {
			log.Error(err, "assigner stopped")
		}
		a.leading.Store(false)
		unhook()
		stop()
	case <-ran: // lost the Lease before the work began
	case <-ctx.Done():
	}
	stopElecting()
	<-ran
	return nil
}

// NeedLeaderElection returns false: the assigner runs its own election,
// so that it can run beside a manager with or without one.
func (*Assigner) NeedLeaderElection() bool { return false }

// Leading reports whether this assigner leads now.
func (a *Assigner) Leading() bool { return a.leading.Load() }

// errStale is a write not sent because the ring changed since the
// object was decided: the pass takes the new ring and decides again.
var errStale = errors.New("the ring changed during the pass")
