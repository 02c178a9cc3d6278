package assign

import (
	"slices"
	"time"
)

// narrowResyncs is how many resyncs in a row may be narrow (see cadence)
// before one looks at every object of the ring again: with the default
// period, a pass over every object every five minutes instead of every 30
// seconds.
const narrowResyncs = 9

// cadence decides when the leader makes a pass and over which objects.
//
// A pass over every object costs a list of the ring's metadata: at 50,000
// objects, a third of what a replica that also serves the webhook
// allocates, for passes that, once the ring is settled, find nothing. The
// ring is settled after a clean pass (no error, nothing draining or
// deferred, no conflict, no change of the ring during it) with the same available
// shards: every object then is either
// on an available shard, or was created or let go since and waits for the
// watch of unassigned objects (watchUnassigned). So a resync of a settled
// ring is narrow: it lists only the objects not on an available shard (a
// label selector the API server's watch cache answers), the safety net
// for what the watch missed. What a narrow pass leaves alone is an object
// that an available shard holds although the ring now picks another (a
// webhook that labelled it with an older view of the ring): it is handled,
// once, and the next pass over every object moves it.
type cadence struct {
	members  []string  // the available shards of the last pass
	due      time.Time // when the next pass is due anyway
	passed   bool      // whether a pass has run
	settled  bool      // whether the last pass was clean
	narrowed int       // narrow passes since the last pass over every object
}

// next reports whether a pass is due at now with the available shards,
// and whether it may be narrow.
func (c *cadence) next(now time.Time, available []string) (due, narrow bool) {
	changed := !c.passed || !slices.Equal(available, c.members)
	if !changed && now.Before(c.due) {
		return false, false
	}
	return true, !changed && c.settled && c.narrowed < narrowResyncs && len(available) > 0
}

// done records a pass that began at now with the available shards, was
// narrow or not, and ended with counts and err; resync and drainCheck are
// the Options' periods.
func (c *cadence) done(now time.Time, available []string, narrow bool, counts Counts, err error, resync, drainCheck time.Duration) {
	c.members, c.passed = available, true
	c.settled = err == nil && counts.Draining == 0 && counts.Deferred == 0 && counts.Conflicts == 0 && counts.Renewed == 0
	if narrow {
		c.narrowed++
	} else {
		c.narrowed = 0
	}
	c.due = now.Add(resync)
	if !c.settled {
		c.due = now.Add(drainCheck)
	}
}
