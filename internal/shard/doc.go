// Package shard splits an operator's objects among its replicas, as the
// reference design does (timebertt/kubernetes-controller-sharding), and
// speaks its protocol: its labels, keys, hash ring and Lease states, so
// that a gopf replica can be a shard of a ring that the reference's
// sharder assigns, and gopf's own assigner picks the shards it would.
//
// A ring is a set of replicas (shards) that share the work on some kinds.
// Each shard announces itself with a Lease of its own, named after it and
// labelled RingLabel, which it holds and renews as a leader holds its
// election lease (Member) and releases when it stops gracefully. From the
// ring's Leases and the time, ShardsOf tells each shard's State (Ready,
// Expired, Uncertain, Dead, Orphaned) and which shards are Available.
//
// Every object of a ring belongs to one shard, written on it in the label
// ShardLabel(ring) = shard. Which shard is decided by consistent hashing
// (Ring) of the object's key: its group, kind, namespace and name
// (ObjectKey), or its controller's (ControllerKey), so that children land
// with their owner. A shard watches and caches only its objects
// (AssignedSelector): each replica's memory and work shrink as the ring
// grows.
//
// An object moves away from a live shard in two steps, so that no two
// shards ever work on it at once: the assigner adds DrainLabel(ring); the
// shard stops all work on the object and acknowledges by removing both
// labels (Draining, Unassign); only then is the object assigned anew. The
// objects of a Dead shard move at once, since nobody is left to ask.
//
// This package holds the protocol and the membership. Assigning (the
// admission webhook and the controller that rebalances when shards come
// and go) and draining (which the engine must do, stopping handlers,
// timers and daemons of the object first) are built on it elsewhere.
package shard
