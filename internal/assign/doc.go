// Package assign is gopf's embedded assigner: it gives the objects of a
// ring (package shard) to the ring's shards where the reference's sharder
// (timebertt/kubernetes-controller-sharding) is not installed, by the same
// rules, so that the two can replace each other.
//
// One replica at a time assigns: every replica runs an Assigner, which
// runs for election on a Lease of its own (Ring + "-assigner", in the
// ring's namespace, not labelled with the ring, so it is not a shard), and
// releases it when it stops, so another replica takes over at once. The
// leader watches the ring's Leases (View), claims the Lease of a shard
// that has been silent for two lease durations (shard.Claim; the claim
// fails if the shard renews first), assigns each object without a shard as
// it appears (a watch of the unassigned objects: new ones, and those whose
// shard let go of them after a drain), and makes a pass over the ring's
// objects whenever the available shards change, and every ResyncPeriod
// otherwise: the pass moves objects between shards and assigns what the
// watch missed. While the ring is settled, a resync looks only at the
// objects without an available shard, and every tenth at all of them
// (see cadence). A pass lists every kind of the ring, metadata only, and
// decides each object with Decide: an unassigned object is assigned to the
// ring's choice; an object of a shard that is gone (dead, orphaned, or no
// member at all) moves at once; an object whose live shard is no longer
// the ring's choice is drained first (shard.DrainLabel), and assigned by a
// later pass once its shard acknowledged by removing both labels. A pass
// that left objects draining is followed by another after
// DrainCheckPeriod, not a whole ResyncPeriod.
//
// Children follow their controller: an object of a controlled Kind hashes
// with its controller's key (shard.ControllerKey), and is assigned only if
// its controller is of a main kind of the ring. Unlike the reference
// sharder, which moves children at once and lets their controller's drain
// keep shards apart, the assigner drains children too: a gopf shard may
// run handlers, timers and daemons on a child, which must stop on the old
// shard before they start on the new one.
//
// What it costs the API server: per pass, two LISTs of each kind (in each
// of Namespaces, if given), metadata only, selecting the objects without
// a shard and those without an available shard, and unless the pass is
// narrow a third of every object, with resourceVersion=0 so that the API
// server's watch cache serves them (or in pages of PageSize); a watch on the ring's few Leases; per kind
// (and namespace), a metadata watch selecting on the shard label's
// absence, which carries only objects without a shard, and a LIST of one
// object where it starts; and writes only for objects that move, one
// merge patch of their labels each (two for a drained object, plus its
// shard's acknowledgement). Its cost does not grow with the assigned
// objects beyond those lists: it neither watches nor caches them, and
// holds an unassigned object only until it has written its label. The
// writes go through two token buckets: the drains, which move objects
// that a live shard handles meanwhile, at most DrainsPerSecond, so the
// rebalance of ten thousand objects when a shard joins spreads over
// minutes; the rescues, which give a shard to objects that nobody handles
// (new, or of a dead shard), at most RescuesPerSecond, with a few patches
// in flight, so that a dead replica's objects move in seconds. A pass
// whose ring changes under it decides the object at hand again and goes
// on down the list with the new ring, and another pass follows it (see
// pass.renew). An object is not moved onto or off a shard that missed its
// renewal (Defer): probably dead, it would not handle the object nor let
// go of it.
//
// Every patch carries the resourceVersion it was decided on, so it
// applies only to the labels it saw (see pass.write); a refused patch is
// decided again once on a fresh read, then left to the next pass.
//
// gopf's admission webhook assigns objects at CREATE, so that they cost no
// write later, with ShardFor and a View on every replica that serves it
// (see the operator's offerShardAtCreate); the assigner then finds nothing
// to do but what the webhook missed.
package assign
