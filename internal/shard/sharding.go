package shard

import "time"

// Sharding is how an operator takes part in a ring, as the engine gets it
// (reconcile.Sharding is its public twin, field for field).
type Sharding struct {
	// Ring names the ring the operator's replicas share.
	Ring string
	// Shard names this replica; zero means the host name.
	Shard string
	// Namespace holds the ring's Leases.
	Namespace string
	// LeaseDuration is how long this shard's Lease lasts unrenewed; zero
	// means DefaultLeaseDuration.
	LeaseDuration time.Duration
	// KeepManagedFields keeps metadata.managedFields on the objects in the
	// shard's cache, which drops them by default.
	KeepManagedFields bool
	// ExternalAssigner leaves assigning objects to a sharder outside the
	// operator; by default one replica at a time assigns them.
	ExternalAssigner bool
}

// Member returns the options of this replica's Member.
func (s Sharding) Member() MemberOptions {
	return MemberOptions{Ring: s.Ring, Shard: s.Shard, Namespace: s.Namespace, LeaseDuration: s.LeaseDuration}
}
