package shard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The lease timings of controller-runtime's leader election, which the
// reference's shards use.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultDrainTimeout bounds a graceful stop's wait for the shard's
	// work in flight, as controller-runtime's default graceful shutdown
	// timeout bounds a manager's stop.
	DefaultDrainTimeout = 30 * time.Second
)

// ErrLeaseLost is returned by Member.Start when the member could not renew
// its Lease within the renew deadline. From then on other shards may be
// given its objects: the process must stop working on them at once, as a
// leader that lost its election does.
var ErrLeaseLost = errors.New("the shard lost its Lease")

// MemberOptions configure a Member.
type MemberOptions struct {
	// Ring names the ring to join (ValidateRing). Required.
	Ring string
	// Shard names this replica's shard: its Lease's name and holder
	// identity, and the value of ShardLabel on its objects
	// (ValidateShard). Zero means the host name, which is the pod's name
	// in a cluster: unique among replicas, and new for each pod.
	Shard string
	// Namespace is where the Lease lives, usually the operator's.
	// Required.
	Namespace string
	// LeaseDuration is how long the Lease lasts without renewal: others
	// see the shard Expired after it and Uncertain after twice it. The
	// Lease stores whole seconds, so it must be a whole number of
	// seconds. Zero means DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long the member keeps trying to renew before it
	// gives the Lease up for lost (ErrLeaseLost); shorter than
	// LeaseDuration. Zero means DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod is how often the member tries to acquire or renew the
	// Lease. Zero means DefaultRetryPeriod.
	RetryPeriod time.Duration
	// Log receives the member's few lines (joined, lost). The zero value
	// means the logger of Start's context, controller-runtime's.
	Log logr.Logger
	// OnJoin, if set, is called once the member holds its Lease for the
	// first time: from then on it may work on the shard's objects. A
	// replica must not work on them before, since another process may
	// hold the shard under the same name.
	OnJoin func()
	// OnHeldElsewhere, if set, is called when the member finds its shard's
	// Lease held by another process under the same shard name (see
	// HolderAnnotation): it does not join until that process lets go.
	OnHeldElsewhere func()
	// Drain, if set, is called when the member is asked to stop, before it
	// releases its Lease: it stops work on the shard's objects from
	// starting and waits, up to timeout, for the work in flight (handler
	// calls and the writes of their outcomes, daemons); it reports whether
	// all of it finished. Only then is the Lease released, so that the
	// shard that takes the objects over never works on them at the same
	// time; if the work did not finish, the Lease is left to expire
	// instead, which gives the process time to exit first. When the Lease
	// is lost, Drain is called with a zero timeout, to stop new work at
	// once.
	Drain func(timeout time.Duration) bool
	// DrainTimeout bounds Drain. Zero means DefaultDrainTimeout. A manager
	// whose graceful shutdown timeout is shorter exits first, with the
	// Lease held: it expires.
	DrainTimeout time.Duration
}

// Member is this replica's membership in a ring: a manager.Runnable that
// acquires the shard's Lease (labelled with the ring), renews it as leader
// election renews its lease, and releases it when stopped gracefully, which
// tells the assigner at once that the shard left (Dead) instead of after
// the Lease expires. It does not need leader election: every replica is a
// member.
type Member struct {
	ring, shard string
	elector     *leaderelection.LeaderElector
	lock        *processLock
	log         logr.Logger
	onJoin      func()
	drain       func(time.Duration) bool
	drainFor    time.Duration
	joined      chan struct{} // closed on joining
	started     sync.Once
}

// NewMember returns the member for opts, which renews its Lease through
// leases: a client straight to the API server (for example
// kubernetes.NewForConfig(cfg).CoordinationV1()), not a cache.
func NewMember(leases coordinationv1client.LeasesGetter, opts MemberOptions) (*Member, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m := &Member{ring: opts.Ring, shard: opts.Shard, log: opts.Log, joined: make(chan struct{}),
		onJoin: opts.OnJoin, drain: opts.Drain, drainFor: opts.DrainTimeout}
	m.lock = newProcessLock(leases, opts.Namespace, opts.Shard, map[string]string{RingLabel: opts.Ring})
	m.lock.elsewhere = opts.OnHeldElsewhere
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Name:            opts.Ring + "/" + opts.Shard,
		Lock:            m.lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				m.log.Info("joined the ring")
				close(m.joined)
				if m.onJoin != nil {
					m.onJoin()
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("shard %q of ring %q: %w", opts.Shard, opts.Ring, err)
	}
	m.elector = elector
	return m, nil
}

// defaults fills in the zero values of o and checks the rest.
func (o *MemberOptions) defaults() error {
	if err := ValidateRing(o.Ring); err != nil {
		return err
	}
	if o.Shard == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("naming the shard after the host: %w", err)
		}
		o.Shard = host
	}
	if err := ValidateShard(o.Shard); err != nil {
		return err
	}
	if o.Namespace == "" {
		return fmt.Errorf("shard %q of ring %q: the Lease's namespace is empty: set Sharding.Namespace (gopf.Main: --shard-namespace or $POD_NAMESPACE)", o.Shard, o.Ring)
	}
	o.LeaseDuration = orDefault(o.LeaseDuration, DefaultLeaseDuration)
	o.RenewDeadline = orDefault(o.RenewDeadline, DefaultRenewDeadline)
	o.RetryPeriod = orDefault(o.RetryPeriod, DefaultRetryPeriod)
	o.DrainTimeout = orDefault(o.DrainTimeout, DefaultDrainTimeout)
	if o.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("shard %q of ring %q: the lease duration %v is not a whole number of seconds, which a Lease stores",
			o.Shard, o.Ring, o.LeaseDuration)
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

// Start joins the ring and stays in it until ctx is done; then it drains
// the shard's work (MemberOptions.Drain), releases the Lease and returns
// nil. It returns ErrLeaseLost, without waiting for ctx, if the Lease could
// not be renewed in time. A Member starts once.
func (m *Member) Start(ctx context.Context) error {
	err := fmt.Errorf("shard %q of ring %q: a member starts once", m.shard, m.ring)
	m.started.Do(func() { err = m.run(ctx) })
	return err
}

// run runs the elector until ctx is done or the Lease is lost.
func (m *Member) run(ctx context.Context) error {
	if m.log.GetSink() == nil {
		m.log = logf.FromContext(ctx)
	}
	m.log = m.log.WithValues("ring", m.ring, "shard", m.shard)
	m.lock.log = m.log
	if ctx.Err() != nil {
		return nil // stopped before it started
	}
	// The elector releases the Lease when its context ends: that is after
	// the drain, not when the member is asked to stop.
	electing, stopElecting := context.WithCancel(logr.NewContext(context.WithoutCancel(ctx), m.log))
	defer stopElecting()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-ctx.Done():
			m.drainWork()
			stopElecting()
		case <-electing.Done():
		}
	}()
	m.elector.Run(electing) // calls OnStartedLeading at most once
	stopElecting()
	<-drained
	if ctx.Err() != nil {
		select {
		case <-m.joined:
			m.log.Info("left the ring")
		default:
		}
		return nil
	}
	if m.drain != nil {
		m.drain(0) // stop new work at once: another shard may be given the objects
	}
	m.log.Info("lost the Lease: leaving the ring")
	return fmt.Errorf("shard %q of ring %q: %w", m.shard, m.ring, ErrLeaseLost)
}

// drainWork runs the drain when the member stops, if it holds its Lease:
// a member that never joined has no work in flight. If the work does not
// finish in time, the Lease is kept rather than released.
func (m *Member) drainWork() {
	select {
	case <-m.joined:
	default:
		return
	}
	if m.drain == nil || m.drain(m.drainFor) {
		return
	}
	m.log.Info("work on the shard's objects still runs after the drain timeout: the Lease is left to expire, not released, "+
		"so that no other shard works on the objects at the same time", "timeout", m.drainFor)
	m.lock.keepOnRelease()
}

// Ready is a readiness check (healthz.Checker): it fails until the member
// holds its Lease, for example while another process holds the shard under
// the same name.
func (m *Member) Ready(*http.Request) error {
	select {
	case <-m.joined:
		return nil
	default:
		return fmt.Errorf("shard %q of ring %q does not hold its Lease yet", m.shard, m.ring)
	}
}

// NeedLeaderElection returns false: every replica is a member of the ring,
// leader or not.
func (*Member) NeedLeaderElection() bool { return false }

// Joined is closed once the member holds its Lease for the first time:
// from then on the ring counts it, and it may work on the objects assigned
// to it.
func (m *Member) Joined() <-chan struct{} { return m.joined }

// Ring returns the name of the member's ring.
func (m *Member) Ring() string { return m.ring }

// Shard returns the member's shard name: its Lease's name, and the value
// of ShardLabel on its objects.
func (m *Member) Shard() string { return m.shard }

// Selector selects the objects assigned to this member (AssignedSelector).
func (m *Member) Selector() labels.Selector {
	return labels.SelectorFromValidatedSet(labels.Set{ShardLabel(m.ring): m.shard})
}
