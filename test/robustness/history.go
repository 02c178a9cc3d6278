package robustness

import (
	"fmt"
	"strings"
	"time"
)

// Versions are the values the generator gives an object's three kinds of
// change: its spec, a label, and the field a field handler watches. Each
// write of the generator sets a value never used before ("s3", "l2", "w5"),
// so a handler's view of the object says which changes it saw.
type Versions struct {
	Spec, Label, Watched string
}

func (v Versions) String() string { return v.Spec + "/" + v.Label + "/" + v.Watched }

// EventKind says what an Event records.
type EventKind string

// The kinds of events a history holds.
const (
	// EventWrite: the generator's client created or changed an object;
	// Versions are the object's after the write.
	EventWrite EventKind = "write"
	// EventDelete: the generator's client deleted an object.
	EventDelete EventKind = "delete"
	// EventConflict: another writer changed the object's metadata (a
	// finalizer of its own), racing gopf's writes.
	EventConflict EventKind = "conflict"
	// EventStart: operator process Process started (its caches in sync).
	EventStart EventKind = "start"
	// EventStop: operator process Process stopped (it has exited).
	EventStop EventKind = "stop"
	// EventCall: a handler returned; Versions are what it saw.
	EventCall EventKind = "call"
	// EventRefused: a write of the operator about the object did not land
	// (refused by the API server or the fault proxy, or cut off).
	EventRefused EventKind = "refused"
	// EventLost: a write of the operator about the object landed and its
	// response was lost on the way back (the operator got an error). It
	// excuses no repeat: the outcome was written.
	EventLost EventKind = "lost"
	// EventLostResults: a write that does not carry the state landed and
	// its response was lost: a status patch of handler results on a kind
	// whose state goes to annotations in the object patch after it, or an
	// object patch on a kind whose state goes to status after it. It
	// excuses no repeat, but it does not carry the state either: gopf
	// writes the state next, and a kill before that write cuts the call's
	// outcome.
	EventLostResults EventKind = "lost-results"
	// EventLanded: a write of the operator about the object that carries
	// handler outcomes (gopf's stored state) landed, and the operator got
	// the answer.
	EventLanded EventKind = "landed"
	// EventLandedNoState: a write of the operator about the object that
	// carries no state landed (see EventLostResults for which): it excuses
	// no repeat and records no outcome, but it may be the write that let
	// the object go (a finalizer's removal where the state is in status).
	EventLandedNoState EventKind = "landed-no-state"
	// EventKill: operator process Process was killed with SIGKILL (Detail
	// says at which moment); it wrote nothing more.
	EventKill EventKind = "kill"
	// EventDaemonStart: a daemon of process Process began to run for the
	// object (Daemon is the run's id).
	EventDaemonStart EventKind = "daemon-start"
	// EventDaemonStop: daemon run Daemon returned, asked to stop for the
	// reason Detail says. A daemon killed with its process has no
	// EventDaemonStop: it ends at the EventKill.
	EventDaemonStop EventKind = "daemon-stop"
	// EventTimerStart: a timer of process Process began a run for the
	// object (Run is the run's id): its side effect happened.
	EventTimerStart EventKind = "timer-start"
	// EventTimerEnd: timer run Run returned. A run killed with its process
	// has no EventTimerEnd: it ends at the EventKill.
	EventTimerEnd EventKind = "timer-end"
	// EventStopping: operator process Process was asked to stop gracefully
	// (SIGTERM, or its manager's context cancelled); its EventStop follows
	// once it has.
	EventStopping EventKind = "stopping"
)

// Outcome is how a handler call ended.
type Outcome string

// The outcomes of a handler call.
const (
	// Succeeded: the handler returned no error.
	Succeeded Outcome = "ok"
	// FailedForGood: the handler returned a permanent error.
	FailedForGood Outcome = "failed"
	// Retrying: the handler returned a temporary error.
	Retrying Outcome = "retry"
	// Interrupted: the operator stopped while the handler ran.
	Interrupted Outcome = "interrupted"
	// Killed: the operator process was killed while the handler ran; the
	// handler's side effect happened, its outcome was never written.
	Killed Outcome = "killed"
)

// finished reports whether the call ends the handler's work on its cause.
func (o Outcome) finished() bool { return o == Succeeded || o == FailedForGood }

// The handler ids of the suite's registry.
const (
	HandlerCreate = "create"
	HandlerUpdate = "update"
	HandlerField  = "field"
	HandlerDelete = "delete"
	HandlerResume = "resume"
)

// Event is one entry of a History.
type Event struct {
	At      time.Time
	Kind    EventKind
	Object  string // the object's name; "" for operator starts and stops
	UID     string
	Process int // the operator process: of EventStart, EventStop, EventKill, EventCall

	Versions Versions // EventWrite, EventCall
	Handler  string   // EventCall
	Reason   string   // EventCall: the cause's reason
	Outcome  Outcome  // EventCall
	Patched  bool     // EventCall: the handler patched its own object
	// Run: EventDaemonStart, EventDaemonStop: which daemon run;
	// EventTimerStart, EventTimerEnd: which timer run.
	Run int
	// Detail: EventRefused, EventLost, EventLostResults, EventLanded, EventLandedNoState: the
	// request and its status; EventCall: the diff; EventKill: the moment;
	// EventDaemonStop: the stop reason.
	Detail string
}

func (e Event) String() string {
	switch e.Kind {
	case EventStart, EventStop, EventStopping:
		return fmt.Sprintf("%s process %d", e.Kind, e.Process)
	case EventKill:
		return fmt.Sprintf("kill process %d (%s)", e.Process, e.Detail)
	case EventCall:
		s := fmt.Sprintf("call %s(%s) on %s by process %d saw %s: %s", e.Handler, e.Reason, e.Object, e.Process, e.Versions, e.Outcome)
		if e.Patched {
			s += " (patched its object)"
		}
		if e.Handler == HandlerUpdate {
			s += "; diff " + e.Detail
		}
		return s
	case EventDaemonStart:
		return fmt.Sprintf("daemon %d of %s started by process %d", e.Run, e.Object, e.Process)
	case EventDaemonStop:
		return fmt.Sprintf("daemon %d of %s in process %d stopped: %q", e.Run, e.Object, e.Process, e.Detail)
	case EventTimerStart:
		return fmt.Sprintf("timer run %d of %s started by process %d", e.Run, e.Object, e.Process)
	case EventTimerEnd:
		return fmt.Sprintf("timer run %d of %s in process %d ended", e.Run, e.Object, e.Process)
	case EventWrite:
		return fmt.Sprintf("write %s: %s", e.Object, e.Versions)
	case EventRefused:
		return fmt.Sprintf("refused write on %s: %s", e.Object, e.Detail)
	case EventLost, EventLostResults:
		return fmt.Sprintf("lost the response of a write on %s: %s", e.Object, e.Detail)
	case EventLanded:
		return fmt.Sprintf("landed write on %s: %s", e.Object, e.Detail)
	case EventLandedNoState:
		return fmt.Sprintf("landed write without state on %s: %s", e.Object, e.Detail)
	}
	return fmt.Sprintf("%s %s", e.Kind, e.Object)
}

// Final is what an object looked like once the run had settled.
type Final struct {
	// Exists is false when the object is gone.
	Exists bool
	// UID is the object's UID.
	UID string
	// Finalizers are the object's finalizers.
	Finalizers []string
	// Versions are the object's values at the end.
	Versions Versions
	// ForeignFinalizer says whether the other writer's finalizer is meant
	// to be on the object: gopf must not have removed it.
	ForeignFinalizer bool
	// Writes counts the operator's write requests about the object, refused
	// ones included.
	Writes int
}

// History is what one run recorded: the events in the order they happened,
// and the objects as they were at the end. Check judges it.
type History struct {
	Events []Event
	Final  map[string]Final // by object name
	// Finalizers are the finalizers gopf may put on objects.
	Finalizers []string
	// Terminating: deleted objects stay, terminating, and only need to be
	// rid of gopf's finalizers (Namespaces: envtest has no namespace
	// controller).
	Terminating bool
	// WritesPerCall is the budget of writes a handler call may cost: 1 where
	// results and state go out in one request, 2 where state goes to
	// annotations and results to status.
	WritesPerCall int
	// End is when the history was gathered: its daemons that had not
	// ended ran until then.
	End time.Time
	// DaemonTicks counts the iterations the daemons reported.
	DaemonTicks int
	// TimerInterval is the interval of the operator's timer on every
	// object; 0 if it registers none (then the checker wants no timer
	// running, and asks for none).
	TimerInterval time.Duration
}

// Format lists the events, one a line, for a failure message.
func (h History) Format() string {
	var b strings.Builder
	for i, e := range h.Events {
		fmt.Fprintf(&b, "  %3d %s\n", i, e)
	}
	return b.String()
}
