package assign

import "github.com/go-logr/logr"

// Counts are what one pass over the ring's objects saw and did.
type Counts struct {
	// Narrow is true for a pass that listed only the objects without an
	// available shard (see cadence).
	Narrow bool
	// Listed objects were looked at in the pass's list of the ring's
	// objects (of a narrow pass: of those without an available shard); the
	// objects without a shard that a pass over every object looks at first
	// are listed again there.
	Listed int
	// Assigned, Reassigned and Drained count the patches of each Action
	// that the API server accepted.
	Assigned, Reassigned, Drained int
	// Draining objects wait for their shard to acknowledge a drain, this
	// pass's included.
	Draining int
	// Deferred counts the decisions to leave an object for later because a
	// shard it would move from or to missed its renewal (Defer); a pass
	// soon after looks again.
	Deferred int
	// Skipped objects cannot be assigned: children without a controller of
	// a main kind.
	Skipped int
	// Conflicts are patches refused twice because the object changed
	// meanwhile; a pass soon after looks again.
	Conflicts int
	// Failed patches met another error, logged once per pass.
	Failed int
	// Renewed counts the changes of the shards during the pass that change
	// what it decides (see pass.stale), after which it went on with the
	// new ring (see pass.renew).
	Renewed int
}

// log writes the pass's line: at Info if it wrote anything, left objects
// draining or failed, at V(1) if the ring was already as it should be.
func (c Counts) log(log logr.Logger, available []string, err error) {
	kv := []any{"shards", available, "narrow", c.Narrow, "listed", c.Listed, "assigned", c.Assigned, "reassigned", c.Reassigned,
		"drained", c.Drained, "draining", c.Draining, "deferred", c.Deferred, "skipped", c.Skipped,
		"conflicts", c.Conflicts, "failed", c.Failed, "renewed", c.Renewed}
	switch {
	case err != nil:
		log.Error(err, "pass over the ring's objects", kv...)
	case c.Assigned+c.Reassigned+c.Drained+c.Draining+c.Deferred+c.Conflicts+c.Renewed > 0:
		log.Info("pass over the ring's objects", kv...)
	default:
		log.V(1).Info("pass over the ring's objects", kv...)
	}
}
