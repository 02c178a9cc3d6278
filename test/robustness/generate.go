package robustness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// OpKind says what an Op does.
type OpKind string

// The operations a sequence is made of.
const (
	// OpCreate creates object Object with fresh values.
	OpCreate OpKind = "create"
	// OpSpec, OpLabel and OpWatched change the object's spec, its label,
	// or the field the field handler watches, to a fresh value.
	OpSpec    OpKind = "update-spec"
	OpLabel   OpKind = "update-label"
	OpWatched OpKind = "update-watched"
	// OpDelete deletes the object.
	OpDelete OpKind = "delete"
	// OpConflict is another writer: it adds its own finalizer to the
	// object, or removes it, with an update racing gopf's writes.
	OpConflict OpKind = "conflicting-writer"
	// OpArm makes the next call of Handler on the object (the next
	// iteration of its daemon, for HandlerDaemon; the next run of its
	// timer, for HandlerTimer) behave as Behaviour says.
	OpArm OpKind = "arm"
	// OpStop stops the operator (gracefully: running reconciles finish);
	// OpStart starts a new one, with nothing in memory.
	OpStop  OpKind = "stop"
	OpStart OpKind = "start"
	// OpRestartInHandler waits until the handler armed with BehaveBlock is
	// running, then restarts the operator under it.
	OpRestartInHandler OpKind = "restart-in-handler"
	// OpAwaitBlock waits until the handler armed with BehaveBlock is
	// running, and leaves it blocking: the operations after it happen
	// while it runs (scenarios written by hand; Generate has none).
	OpAwaitBlock OpKind = "await-block"
	// OpFaults makes the API server refuse a fraction of the operator's
	// writes (Fault says how) until OpHeal.
	OpFaults OpKind = "refuse-writes"
	OpHeal   OpKind = "heal"
	// OpRestartAfterLost waits, while responses are lost (FaultLostReset,
	// FaultLost502), until the response of one of the operator's writes
	// was lost, then restarts the operator at once.
	OpRestartAfterLost OpKind = "restart-after-lost-response"
	// OpSettle waits until the operator has nothing left to do.
	OpSettle OpKind = "settle"
	// OpKill kills the operator process with SIGKILL (no graceful stop,
	// no deferred write), at the moment Moment says, and starts a new
	// one. A sequence with a kill runs its operators as processes of
	// their own (see Sequence.Kills).
	OpKill OpKind = "kill"
)

// Moment is when OpKill kills the operator process.
type Moment string

// The moments of OpKill. All but MomentAnytime are those of a handler
// armed with BehaveKill just before the operation that calls it.
const (
	// MomentBeforeHandler: as the armed handler is called, before its side
	// effect; for a create handler, after gopf persisted its finalizer.
	MomentBeforeHandler Moment = "before-handler"
	// MomentInHandler: after the armed handler's side effect, before it
	// returns, so its outcome is never written (a delete handler: during
	// the deletion).
	MomentInHandler Moment = "in-handler"
	// MomentAfterHandler: Delay after the armed handler returned: before,
	// while or after its outcome is written.
	MomentAfterHandler Moment = "after-handler"
	// MomentAnytime: Delay after the operation before, whatever runs.
	MomentAnytime Moment = "anytime"
	// MomentAfterLostResponse: while responses are lost, right after the
	// response of one of the operator's writes was lost (the write landed;
	// the operator could not tell).
	MomentAfterLostResponse Moment = "after-lost-response"
	// MomentInDaemon: while the daemon of the armed object (Handler
	// HandlerDaemon) is mid-iteration: it reported an iteration and waits
	// for the answer.
	MomentInDaemon Moment = "in-daemon"
	// MomentInTimer: while a run of the timer of the armed object (Handler
	// HandlerTimer) is under way: it reported its start and waits for the
	// answer.
	MomentInTimer Moment = "in-timer"
)

// armedMoments are the moments of a kill armed on a handler, each picked
// as often.
var armedMoments = []Moment{MomentBeforeHandler, MomentInHandler, MomentAfterHandler}

// Behaviour is what an armed handler does on its next call.
type Behaviour string

// The behaviours of an armed handler.
const (
	// BehaveTemporary fails with a temporary error Times times.
	BehaveTemporary Behaviour = "fail-temporarily"
	// BehavePermanent fails for good.
	BehavePermanent Behaviour = "fail-for-good"
	// BehavePatch succeeds and patches its own object (a label).
	BehavePatch Behaviour = "patch-own-object"
	// BehaveBlock runs until the operator stops. Armed on any change
	// handler of the object, the first one called blocks (a change may go
	// to another handler's retry); armed on the resume handler, that one.
	BehaveBlock Behaviour = "block"
	// BehaveKill has the operator process killed around the call, at the
	// arm's Moment; OpKill follows the operation that calls it.
	BehaveKill Behaviour = "kill"
)

// Fault is how the API server refuses writes during OpFaults.
type Fault string

// The faults of OpFaults.
const (
	Fault409     Fault = "409"
	Fault500     Fault = "500"
	FaultTimeout Fault = "timeout" // 504, the API server's own timeout
	FaultSlow    Fault = "slow"    // held for a while, then forwarded
	// FaultLostReset and FaultLost502 forward the write and lose its
	// response: the client's connection is reset, or it gets 502. The
	// write landed; the operator cannot tell.
	FaultLostReset Fault = "lost-response-reset"
	FaultLost502   Fault = "lost-response-502"
)

// AllFaults are the faults of OpFaults, each picked as often.
var AllFaults = []Fault{Fault409, Fault500, FaultTimeout, FaultSlow, FaultLostReset, FaultLost502}

// Loses reports whether the fault loses responses of writes that landed.
func (f Fault) Loses() bool { return f == FaultLostReset || f == FaultLost502 }

// Op is one step of a sequence.
type Op struct {
	Kind      OpKind
	Object    int // the object's number
	Handler   string
	Behaviour Behaviour
	Times     int
	Fault     Fault
	Moment    Moment        // OpKill, and OpArm with BehaveKill
	Delay     time.Duration // of MomentAfterHandler and MomentAnytime
}

func (op Op) String() string {
	switch op.Kind {
	case OpArm:
		s := fmt.Sprintf("arm %s on obj%d: %s", op.Handler, op.Object, op.Behaviour)
		switch op.Behaviour {
		case BehaveTemporary:
			s += fmt.Sprintf(" x%d", op.Times)
		case BehaveKill:
			s += " " + op.moment()
		}
		return s
	case OpKill:
		return fmt.Sprintf("%s %s", op.Kind, op.moment())
	case OpStop, OpStart, OpRestartInHandler, OpAwaitBlock, OpRestartAfterLost, OpHeal, OpSettle:
		return string(op.Kind)
	case OpFaults:
		return fmt.Sprintf("%s %s", op.Kind, op.Fault)
	}
	return fmt.Sprintf("%s obj%d", op.Kind, op.Object)
}

// moment describes the op's Moment, with its Delay where it has one.
func (op Op) moment() string {
	if op.Moment == MomentAfterHandler || op.Moment == MomentAnytime {
		return fmt.Sprintf("%s +%s", op.Moment, op.Delay)
	}
	return string(op.Moment)
}

// Sequence is the operations one seed gives, in order.
type Sequence []Op

// Kills reports whether the sequence kills the operator: its operators
// then run as processes of their own, which a SIGKILL can end.
func (s Sequence) Kills() bool {
	return slices.ContainsFunc(s, func(op Op) bool { return op.Kind == OpKill })
}

func (s Sequence) String() string {
	parts := make([]string, len(s))
	for i, op := range s {
		parts[i] = fmt.Sprintf("%2d %s", i, op)
	}
	return strings.Join(parts, "\n")
}

// Generate returns the sequence of operations of seed: two to four
// objects created, changed, deleted, around operator stops and restarts,
// refused writes, lost responses (and restarts right after one), another
// writer, handlers armed to fail or patch, and in half the sequences
// SIGKILLs of the operator.
// The same seed gives the same sequence. The sequence ends with the
// operator running and the faults healed, so a run can settle.
//
// Kills are drawn from a generator of their own, so a sequence without
// kills is the one the seed gave before kills existed, and a sequence
// with kills is that one with kills put in; kills during a daemon from a
// third and kills during a timer run from a fourth, so they add to the
// kills a seed gave before them.
func Generate(seed uint64) Sequence {
	g := &generator{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), running: true}
	g.kills = rand.New(rand.NewPCG(seed^0x4b111, seed))
	g.daemonKills = rand.New(rand.NewPCG(seed^0xdae, seed))
	g.timerKills = rand.New(rand.NewPCG(seed^0x713e, seed))
	g.killing = g.kills.IntN(2) == 0
	objects := 2 + g.rng.IntN(3)
	steps := 10 + g.rng.IntN(10)
	for len(g.ops)-g.inDaemon-g.inTimer < steps {
		g.step(objects)
	}
	if g.faulty {
		g.add(Op{Kind: OpHeal})
	}
	if !g.running {
		g.add(Op{Kind: OpStart})
	}
	return g.ops
}

// generator keeps what the sequence so far did, so that every operation it
// adds can be carried out.
type generator struct {
	rng   *rand.Rand
	kills *rand.Rand // draws the kills, apart from the other operations
	// daemonKills draws the kills during a daemon, apart from the others;
	// inDaemon counts the operations they added, which do not count
	// toward the sequence's length.
	daemonKills *rand.Rand
	inDaemon    int
	// timerKills and inTimer are the same for kills during a timer run.
	timerKills *rand.Rand
	inTimer    int
	killing    bool // the sequence kills the operator
	ops        Sequence
	created    []bool // by object number
	deleted    []bool
	running    bool
	faulty     bool
	fault      Fault // in force while faulty
}

func (g *generator) add(op Op) { g.ops = append(g.ops, op) }

// step adds one operation (or an armed handler and its trigger).
func (g *generator) step(objects int) {
	for len(g.created) < objects {
		g.created = append(g.created, false)
		g.deleted = append(g.deleted, false)
	}
	live := g.live()
	switch r := g.rng.IntN(100); {
	case r < 18 || len(live) == 0:
		if obj := g.unborn(); obj >= 0 {
			g.maybeArm(obj, HandlerCreate)
			g.add(Op{Kind: OpCreate, Object: obj})
			g.created[obj] = true
			g.afterTrigger()
		} else if len(live) == 0 {
			g.add(Op{Kind: OpSettle})
		}
	case r < 50:
		obj := live[g.rng.IntN(len(live))]
		kind := []OpKind{OpSpec, OpLabel, OpWatched}[g.rng.IntN(3)]
		handler := HandlerUpdate
		if kind == OpWatched && g.rng.IntN(2) == 0 {
			handler = HandlerField
		}
		g.maybeArm(obj, handler)
		g.add(Op{Kind: kind, Object: obj})
		g.afterTrigger()
	case r < 60:
		obj := live[g.rng.IntN(len(live))]
		g.maybeArm(obj, HandlerDelete)
		g.add(Op{Kind: OpDelete, Object: obj})
		g.deleted[obj] = true
		g.afterTrigger()
	case r < 67:
		g.add(Op{Kind: OpConflict, Object: live[g.rng.IntN(len(live))]})
	case r < 80:
		if g.running && g.faulty && g.fault.Loses() && g.rng.IntN(2) == 0 {
			if g.killing && g.kills.IntN(2) == 0 {
				g.add(Op{Kind: OpKill, Moment: MomentAfterLostResponse})
			} else {
				g.add(Op{Kind: OpRestartAfterLost})
			}
			break
		}
		if g.running {
			g.add(Op{Kind: OpStop})
		} else {
			g.add(Op{Kind: OpStart})
		}
		g.running = !g.running
	case r < 88:
		if g.faulty {
			g.add(Op{Kind: OpHeal})
		} else {
			g.fault = AllFaults[g.rng.IntN(len(AllFaults))]
			g.add(Op{Kind: OpFaults, Fault: g.fault})
		}
		g.faulty = !g.faulty
	default:
		g.add(Op{Kind: OpSettle})
	}
	if g.killing && g.running && g.kills.IntN(100) < 8 {
		op := Op{Kind: OpKill, Moment: MomentAnytime, Delay: time.Duration(g.kills.IntN(500)) * time.Millisecond}
		if g.faulty && g.fault.Loses() {
			op = Op{Kind: OpKill, Moment: MomentAfterLostResponse}
		}
		g.add(op)
	}
	g.maybeKillInDaemon()
	g.maybeKillInTimer()
}

// maybeKillInDaemon arms the daemon of a live object to have the operator
// killed mid-iteration, now and then in a sequence that kills.
func (g *generator) maybeKillInDaemon() {
	live := g.live()
	if !g.killing || !g.running || len(live) == 0 || g.daemonKills.IntN(100) >= 6 {
		return
	}
	obj := live[g.daemonKills.IntN(len(live))]
	g.add(Op{Kind: OpArm, Object: obj, Handler: HandlerDaemon, Behaviour: BehaveKill, Moment: MomentInDaemon})
	g.add(Op{Kind: OpKill, Moment: MomentInDaemon})
	g.inDaemon += 2
}

// maybeKillInTimer arms the timer of a live object to have the operator
// killed during its next run, now and then in a sequence that kills.
func (g *generator) maybeKillInTimer() {
	live := g.live()
	if !g.killing || !g.running || len(live) == 0 || g.timerKills.IntN(100) >= 6 {
		return
	}
	obj := live[g.timerKills.IntN(len(live))]
	g.add(Op{Kind: OpArm, Object: obj, Handler: HandlerTimer, Behaviour: BehaveKill, Moment: MomentInTimer})
	g.add(Op{Kind: OpKill, Moment: MomentInTimer})
	g.inTimer += 2
}

// maybeArm arms the handler a trigger will call, now and then. A handler
// blocks only while the operator runs, as the restart under it needs.
func (g *generator) maybeArm(obj int, handler string) {
	if g.rng.IntN(100) >= 35 {
		g.maybeArmKill(obj, handler)
		return
	}
	behaviours := []Behaviour{BehaveTemporary, BehavePermanent, BehavePatch}
	if g.running && !g.faulty {
		behaviours = append(behaviours, BehaveBlock)
	}
	if handler == HandlerDelete {
		// A delete handler that fails for good lets the object go, as Kopf
		// does; one that patches its object patches an object going away.
		behaviours = []Behaviour{BehaveTemporary, BehavePermanent}
		if g.running && !g.faulty {
			behaviours = append(behaviours, BehaveBlock)
		}
	}
	b := behaviours[g.rng.IntN(len(behaviours))]
	g.add(Op{Kind: OpArm, Object: obj, Handler: handler, Behaviour: b, Times: 1 + g.rng.IntN(3)})
}

// maybeArmKill arms the handler a trigger will call to have the operator
// killed at one of armedMoments, now and then in a sequence that kills.
func (g *generator) maybeArmKill(obj int, handler string) {
	if !g.killing || !g.running || g.kills.IntN(100) >= 30 {
		return
	}
	op := Op{Kind: OpArm, Object: obj, Handler: handler, Behaviour: BehaveKill, Moment: armedMoments[g.kills.IntN(len(armedMoments))]}
	if op.Moment == MomentAfterHandler {
		op.Delay = time.Duration(g.kills.IntN(30)) * time.Millisecond
	}
	g.add(op)
}

// afterTrigger restarts the operator under a handler the last arm made
// block, or kills it where the last arm says.
func (g *generator) afterTrigger() {
	n := len(g.ops)
	if n < 2 || g.ops[n-2].Kind != OpArm {
		return
	}
	switch a := g.ops[n-2]; a.Behaviour {
	case BehaveBlock:
		g.add(Op{Kind: OpRestartInHandler})
	case BehaveKill:
		g.add(Op{Kind: OpKill, Moment: a.Moment, Delay: a.Delay})
	}
}

// live returns the objects created and not deleted.
func (g *generator) live() []int {
	var out []int
	for i := range g.created {
		if g.created[i] && !g.deleted[i] {
			out = append(out, i)
		}
	}
	return out
}

// unborn returns an object not created yet, or -1.
func (g *generator) unborn() int {
	for i, c := range g.created {
		if !c {
			return i
		}
	}
	return -1
}
