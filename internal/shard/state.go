package shard

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// State is what a shard's Lease says of the shard at a moment. The states
// and their rules are the reference's; they are ordered from the worst to
// the best, and the last three are Available.
type State int

const (
	// Unknown is no state: the zero value, never returned by ShardOf.
	Unknown State = iota
	// Orphaned: the shard has been Dead for OrphanAfter. Its Lease is
	// garbage and may be deleted.
	Orphaned
	// Dead: the shard released its Lease (holder empty) when it stopped
	// gracefully, or someone else holds it (an assigner that Claimed it).
	// Its objects move to other shards at once.
	Dead
	// Uncertain: the Lease expired at least a lease duration ago. The
	// shard is probably gone; an assigner Claims the Lease to make sure,
	// which makes the shard Dead.
	Uncertain
	// Expired: the Lease expired less than a lease duration ago; the shard
	// may only be slow.
	Expired
	// Ready: the shard holds its Lease and it has not expired.
	Ready
)

// String returns the state's name as the reference writes it in its
// Leases' state label: "ready", "expired", and so on.
func (s State) String() string {
	switch s {
	case Orphaned:
		return "orphaned"
	case Dead:
		return "dead"
	case Uncertain:
		return "uncertain"
	case Expired:
		return "expired"
	case Ready:
		return "ready"
	default:
		return "unknown"
	}
}

// Available reports whether a shard in this state may be assigned objects
// and keeps those it has: Ready, Expired and Uncertain. An Expired or
// Uncertain shard keeps its objects until it is known to be Dead, so that
// two shards never work on one object.
func (s State) Available() bool { return s >= Uncertain }

// The timing rules of the reference.
const (
	// OrphanAfter is how long after its expiry a Dead shard's Lease
	// becomes Orphaned.
	OrphanAfter = time.Minute
	// missingLeaseDuration stands in for a Lease without a duration or
	// times, which counts as expiring now.
	missingLeaseDuration = 15 * time.Second
)

// ClaimIdentity is the holder an assigner writes into the Lease of an
// Uncertain shard (Claim): the reference sharder's.
const ClaimIdentity = "shardlease-controller"

// Shard is a member of a ring as its Lease shows it at a moment.
type Shard struct {
	// Name is the shard's name, the Lease's name.
	Name string
	// State is the shard's state at the moment.
	State State
	// Expires is when the Lease expires (or expired): its renew time plus
	// its duration. A Lease without those expires at the moment.
	Expires time.Time
	// LeaseDuration is the Lease's duration (15 s if it has none).
	LeaseDuration time.Duration
	// Changes is when the state changes if nobody writes the Lease: a
	// Ready shard expires, an Expired one becomes Uncertain, a Dead one
	// Orphaned. It is zero for Uncertain and Orphaned shards, which change
	// only when the Lease is written or deleted. An assigner checks again
	// then.
	Changes time.Time
}

// ShardOf returns what lease says of its shard at now.
//
// The rules, the reference's: a Lease whose holder is not the Lease's own
// name (empty when released, ClaimIdentity when claimed) is Dead, and
// Orphaned from OrphanAfter after its expiry. Otherwise it is Ready until
// it expires (renew time + duration), Expired for one more duration, and
// Uncertain from then on.
func ShardOf(lease *coordinationv1.Lease, now time.Time) Shard {
	s := Shard{Name: lease.Name, Expires: now, LeaseDuration: missingLeaseDuration}
	spec := lease.Spec
	if spec.AcquireTime != nil && spec.RenewTime != nil && spec.LeaseDurationSeconds != nil {
		s.LeaseDuration = time.Duration(*spec.LeaseDurationSeconds) * time.Second
		s.Expires = spec.RenewTime.Add(s.LeaseDuration)
	}
	uncertain := s.Expires.Add(s.LeaseDuration)
	orphaned := s.Expires.Add(OrphanAfter)
	switch {
	case ptr.Deref(spec.HolderIdentity, "") != lease.Name:
		s.State, s.Changes = Dead, orphaned
		if !now.Before(orphaned) {
			s.State, s.Changes = Orphaned, time.Time{}
		}
	case !now.Before(uncertain):
		s.State = Uncertain
	case !now.Before(s.Expires):
		s.State, s.Changes = Expired, uncertain
	default:
		s.State, s.Changes = Ready, s.Expires
	}
	return s
}

// Shards are the members of a ring, in the order of their Leases.
type Shards []Shard

// ShardsOf returns what leases, the Leases of one ring (RingSelector), say
// of their shards at now, in their order.
func ShardsOf(leases []coordinationv1.Lease, now time.Time) Shards {
	out := make(Shards, len(leases))
	for i := range leases {
		out[i] = ShardOf(&leases[i], now)
	}
	return out
}

// Available returns the names of the shards that may be assigned objects
// (State.Available), in order.
func (s Shards) Available() []string {
	var names []string
	for _, sh := range s {
		if sh.State.Available() {
			names = append(names, sh.Name)
		}
	}
	return names
}

// Changes returns the earliest time a shard's state changes if nobody
// writes its Lease (Shard.Changes), or the zero time if none will: until
// then, ShardsOf the same Leases says the same.
func (s Shards) Changes() time.Time {
	var first time.Time
	for _, sh := range s {
		if !sh.Changes.IsZero() && (first.IsZero() || sh.Changes.Before(first)) {
			first = sh.Changes
		}
	}
	return first
}

// Ring returns the ring of the available shards: where the ring's objects
// belong now.
func (s Shards) Ring() *Ring { return NewRing(s.Available()...) }

// Claim makes lease, the Lease of an Uncertain shard, the assigner's, in
// memory, as the reference sharder does: ClaimIdentity holds it from now
// for twice its duration. Written with optimistic locking (an update with
// the resourceVersion read), it either proves the shard gone, and the
// shard is Dead, or fails because the shard renewed it in time. The shard,
// should it come back, can acquire its Lease again once the claim expires.
func Claim(lease *coordinationv1.Lease, now time.Time) {
	d := ShardOf(lease, now).LeaseDuration
	t := metav1.NewMicroTime(now)
	lease.Spec.HolderIdentity = ptr.To(ClaimIdentity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(2 * d.Round(time.Second) / time.Second))
	lease.Spec.AcquireTime = &t
	lease.Spec.RenewTime = &t
	lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
}
