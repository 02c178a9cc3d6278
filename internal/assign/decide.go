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
	// Defer: the object would move, but a shard it would move from or to
	// has missed its renewal (Expired or Uncertain): probably dead, it
	// would neither handle the object nor let go of it. The object stays
	// as it is until that shard renews (then it moves) or is claimed (then
	// the ring changes), and a pass soon after looks again.
	Defer
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
	case Defer:
		return "defer"
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
// state tells a shard's state (shard.State; Unknown for no member). The
// whole policy, top to bottom:
//
//   - No shard is available: None. There is nowhere to put anything, and
//     an object keeps its label until a shard can take it.
//   - No shard label, and the object is being deleted with no finalizer
//     left: None (it is about to vanish). An object with finalizers still
//     needs a shard to remove them, such as one that a drain released in
//     the middle of its deletion.
//   - No shard label, or its shard is not available (dead, orphaned, or
//     no member at all): Assign (Reassign) to choice at once, drained or
//     not, since nobody handles the object meanwhile; but Defer while
//     choice is not Ready. A shard that missed its renewal is probably
//     dead (a SIGKILLed replica's Lease stays available for two lease
//     durations): an object given to it would wait for its claim and move
//     again, one more write for nothing, while the object that waits
//     moves once, to where the ring puts it then.
//   - Its shard is available and is choice: None. A drain label left from
//     an earlier ring is left too: the shard may already have stopped
//     work on the object, so it finishes the handshake and the object
//     comes back to it.
//   - Its shard is available and is not choice, and it is draining: None
//     (the assigner waits for the acknowledgement).
//   - Its shard or choice is not Ready: Defer. A shard that missed its
//     renewal would not acknowledge a drain, and one to an unready choice
//     would take the object from a live shard to wait for a dead one.
//   - Otherwise: Drain.
func Decide(obj metav1.Object, ring, choice string, state func(name string) shard.State) Decision {
	current := shard.AssignedShard(obj, ring)
	switch {
	case choice == "":
		return Decision{}
	case current == "" && obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0:
		return Decision{}
	case current == "" || !state(current).Available():
		if state(choice) != shard.Ready {
			return Decision{Action: Defer}
		}
		if current == "" {
			return Decision{Action: Assign, Shard: choice}
		}
		return Decision{Action: Reassign, Shard: choice}
	case current == choice, shard.Draining(obj, ring):
		return Decision{}
	case state(current) != shard.Ready, state(choice) != shard.Ready:
		return Decision{Action: Defer}
	default:
		return Decision{Action: Drain}
	}
}
