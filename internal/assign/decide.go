package assign

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/shard"
)

// Action is what the assigner does to one object in a pass.
type Action int

const (
	// None: the object is where it belongs, is waiting for its shard to
	// acknowledge a drain, or cannot be assigned now.
	None Action = iota
	// Assign: the object has no shard; label it with the ring's choice.
	Assign
	// Reassign: the object's shard is not available (dead, orphaned, or
	// not a member at all); move it to the ring's choice at once, since
	// nobody is left to ask, dropping a drain label it may have.
	Reassign
	// Drain: the object's shard is available but the ring now picks
	// another; ask the shard to let go of it (shard.DrainLabel). The shard
	// acknowledges by removing both labels, and a later pass assigns it.
	Drain
)

// String names the action for logs.
func (a Action) String() string {
	switch a {
	case Assign:
		return "assign"
	case Reassign:
		return "reassign"
	case Drain:
		return "drain"
	default:
		return "none"
	}
}

// Decision is an Action and, for Assign and Reassign, the shard the
// object goes to.
type Decision struct {
	Action Action
	Shard  string
}

// Decide returns what to do with obj, an object of ring, that the ring of
// the available shards places on choice ("" if no shard is available);
// available reports whether a shard is available (shard.State.Available).
// The whole policy, top to bottom:
//
//   - No shard is available: None. There is nowhere to put anything, and
//     an object keeps its label until a shard can take it.
//   - No shard label: Assign to choice, unless the object is being deleted
//     and has no finalizer left (it is about to vanish; an object with
//     finalizers still needs a shard to remove them, such as one that a
//     drain released in the middle of its deletion).
//   - Its shard is not available: Reassign to choice at once, drained or
//     not: the shard is gone and cannot acknowledge.
//   - Its shard is available and is choice: None. A drain label left from
//     an earlier ring is left too: the shard may already have stopped
//     work on the object, so it finishes the handshake and the object
//     comes back to it.
//   - Its shard is available and is not choice: Drain, or None if it is
//     draining already (the assigner waits for the acknowledgement).
func Decide(obj metav1.Object, ring, choice string, available func(name string) bool) Decision {
	current := shard.AssignedShard(obj, ring)
	switch {
	case choice == "":
		return Decision{}
	case current == "":
		if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
			return Decision{}
		}
		return Decision{Action: Assign, Shard: choice}
	case !available(current):
		return Decision{Action: Reassign, Shard: choice}
	case current == choice, shard.Draining(obj, ring):
		return Decision{}
	default:
		return Decision{Action: Drain}
	}
}
