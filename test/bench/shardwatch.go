//go:build linux

package bench

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// The reference design's labels, read as an outside sharder reads them:
// an object's shard, and the drain request, each followed by the ring.
const (
	shardLabelPrefix = "shard.alpha.sharding.timebertt.dev/"
	drainLabelPrefix = "drain.alpha.sharding.timebertt.dev/"
)

// shardWatch follows the sharding labels of a sharded run's objects, from
// the tracker's events: which shard each object is assigned to, whether it
// is draining, when the labels changed (each change is one patch, by the
// assigner or by a shard acknowledging a drain: the sharding machinery's
// writes, counted apart from the handlers'), which objects moved from one
// shard to another, and when each object was first seen with its create
// and update outcomes stored.
type shardWatch struct {
	mu      sync.Mutex
	ring    string
	objects map[string]*shardState
	changes []time.Time // every change of an object's sharding labels
}

// shardState is what shardWatch knows of one object.
type shardState struct {
	shard    string // the shard it is assigned to; "" for none
	draining bool
	last     string // the last shard it was assigned to, even while unassigned
	moves    int    // times it was assigned to a shard other than its last one
	gone     bool
	fins     int // its finalizers, as last seen
	// stored is when its outcome of a cause was first seen stored.
	stored map[string]time.Time
}

func newShardWatch(ring string) *shardWatch {
	return &shardWatch{ring: ring, objects: map[string]*shardState{}}
}

// observe takes one event of an object (the tracker's observeAlso).
func (w *shardWatch) observe(o client.Object, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	s := w.objects[o.GetName()]
	first := s == nil
	if first {
		s = &shardState{stored: map[string]time.Time{}}
		w.objects[o.GetName()] = s
	}
	if gone {
		s.gone = true
		return
	}
	// The reference design's labels, as an outside sharder reads them.
	sh := o.GetLabels()[shardLabelPrefix+w.ring]
	_, dr := o.GetLabels()[drainLabelPrefix+w.ring]
	// Labels an object is first seen with came with its create (from a
	// webhook at admission), not with a write of their own.
	if !first && (sh != s.shard || dr != s.draining) {
		w.changes = append(w.changes, now)
	}
	if sh != "" && s.last != "" && sh != s.last {
		s.moves++
	}
	if sh != "" {
		s.last = sh
	}
	s.shard, s.draining, s.fins = sh, dr, len(o.GetFinalizers())
	for cause, updated := range map[string]bool{"create": false, "update": true} {
		if _, seen := s.stored[cause]; !seen && scenario.Handled(o, 1, updated) {
			s.stored[cause] = now
		}
	}
}

// labelWrites counts the label changes in [from, to).
func (w *shardWatch) labelWrites(from, to time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.changes {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// moved returns how many objects moved at least once, and how many moves
// there were.
func (w *shardWatch) moved() (objects, moves int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.objects {
		if s.moves > 0 {
			objects++
			moves += s.moves
		}
	}
	return objects, moves
}

// unassigned counts the objects of names that are not assigned to one of
// live, or are draining.
func (w *shardWatch) unassigned(names []string, live map[string]bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		s := w.objects[name]
		if s == nil || s.gone || s.draining || !live[s.shard] {
			n++
		}
	}
	return n
}

// left counts the objects of names that are still there, and those of
// them that still carry a finalizer.
func (w *shardWatch) left(names []string) (objects, finalized int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range names {
		if s := w.objects[name]; s != nil && !s.gone {
			objects++
			if s.fins > 0 {
				finalized++
			}
		}
	}
	return objects, finalized
}

// storedAt returns, per cause, when each object's outcome was first seen
// stored (for duplicates).
func (w *shardWatch) storedAt() map[string]map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]map[string]time.Time{}
	for name, s := range w.objects {
		for cause, t := range s.stored {
			if out[cause] == nil {
				out[cause] = map[string]time.Time{}
			}
			out[cause][name] = t
		}
	}
	return out
}
