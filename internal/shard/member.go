package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The lease timings of controller-runtime's leader election, which the
// reference's shards use.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
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
	log         logr.Logger
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
	m := &Member{ring: opts.Ring, shard: opts.Shard, log: opts.Log, joined: make(chan struct{})}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Shard},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Shard},
		Labels:     map[string]string{RingLabel: opts.Ring},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Name:            opts.Ring + "/" + opts.Shard,
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				m.log.Info("joined the ring")
				close(m.joined)
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

// Start joins the ring and stays in it until ctx is done; then it releases
// the Lease and returns nil. It returns ErrLeaseLost, without waiting for
// ctx, if the Lease could not be renewed in time. A Member starts once.
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
	m.elector.Run(logr.NewContext(ctx, m.log)) // calls OnStartedLeading at most once
	if ctx.Err() != nil {
		select {
		case <-m.joined:
			m.log.Info("left the ring")
		default:
		}
		return nil
	}
	m.log.Info("lost the Lease: leaving the ring")
	return fmt.Errorf("shard %q of ring %q: %w", m.shard, m.ring, ErrLeaseLost)
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
