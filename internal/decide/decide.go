package decide

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/state"
)

// Route is the way one reconcile takes through an object.
type Route int

const (
	// RouteIgnore: no handler selects the object and no finalizer gopf
	// answers for holds it; gopf leaves it alone.
	RouteIgnore Route = iota
	// RouteLive: a live object; the finalizer step, the cause's change
	// handlers, timers and daemons as selected, then the level handlers.
	RouteLive
	// RouteDelete: the deletion started and gopf's (or Kopf's) finalizer
	// holds the object; the delete handlers, then the finalizer goes.
	RouteDelete
	// RouteOthers: the deletion started and only other controllers'
	// finalizers hold the object; its timers and daemons stop, the level
	// handlers run.
	RouteOthers
	// RouteReleased: this process released its finalizer from the deleted
	// object and the cache does not show it yet; nothing to do.
	RouteReleased
)

// FinalizerStep is what a live object's finalizers need before any handler
// runs.
type FinalizerStep int

const (
	// FinalizerKept: the finalizers stay as they are.
	FinalizerKept FinalizerStep = iota
	// FinalizerAdd: gopf's finalizer is added.
	FinalizerAdd
	// FinalizerRemove: gopf's finalizer is removed.
	FinalizerRemove
)

// Decision is what one reconcile does with an object. Decide works it out
// from the object, what gopf knows of it, the process's memory of it,
// without calling or writing anything; the engine carries it out and the
// planner renders it.
type Decision struct {
	Route     Route
	Finalizer FinalizerStep
	// Reason is the cause the change or delete handlers run for ("" for
	// none); level handlers get it as their Reason.
	Reason handlers.Reason
	// WithResume: resume handlers run, on the process's first sight of a
	// handled object.
	WithResume bool
	// Entries are the handlers of the cause, in registration order.
	Entries []*Entry
	// Superseded are the handlers whose unfinished records a deletion ends.
	Superseded []string
	// Change, Level and Spawn are the registrations that select the object.
	Change, Level, Spawn []*contract.Handler
}

// Selected are the registrations of a kind whose filters accept the object
// (see Selects), in registration order.
type Selected struct {
	Change []*contract.Handler // change handlers
	Level  []*contract.Handler // OnReconcile handlers
	Spawn  []*contract.Handler // timers and daemons
}

// Memory is what Decide needs of the process's memory of an object.
type Memory struct {
	Resumed  bool // resume handlers are done (or do not apply) in this process
	Released bool // this process released its finalizer from the deleted object
	// SpawnHolds reports whether a selected timer or daemon has not
	// finished for good in this process.
	SpawnHolds func(spawn []*contract.Handler) bool
}

// FreshProcess is the memory of a process that has just started: the
// planner's view of what an operator does on start.
var FreshProcess = Memory{SpawnHolds: func(spawn []*contract.Handler) bool { return len(spawn) > 0 }}

// Object is an object as one reconcile sees it.
type Object struct {
	// Obj gives the object's finalizers and deletion.
	Obj client.Object
	// Essence is the object's essence as JSON, and Tree the same decoded.
	Essence string
	Tree    any
	// Known is what gopf knows: the stored state, or a newer one it failed
	// to write; nil if nothing is.
	Known *state.State
	// Records are the progress records as they stand (Known's).
	Records map[string]*state.Progress
}

// Decide works out what a reconcile does with o (see Decision), given the
// finalizers gopf answers for, the registrations that select o and the
// process's memory of it. It changes nothing.
func Decide(o *Object, f Finalizers, sel Selected, mem Memory) Decision {
	d := Decision{Change: sel.Change, Level: sel.Level, Spawn: sel.Spawn}
	held, deleting := f.Holds(o.Obj), o.Obj.GetDeletionTimestamp() != nil
	switch {
	case len(d.Change)+len(d.Level)+len(d.Spawn) == 0 && !held:
		d.Route = RouteIgnore
	case deleting && held && mem.Released:
		d.Route = RouteReleased
	case deleting && held:
		d.Route, d.Reason = RouteDelete, handlers.ReasonDelete
		d.Entries = o.deleteEntries(d.Change, mem.Resumed)
		d.Superseded = o.superseded()
	case deleting:
		d.Route = RouteOthers
	default:
		d.Route = RouteLive
		d.Finalizer = f.Step(o.Obj, WantsFinalizer(sel, mem))
		if len(d.Change)+len(d.Level) == 0 {
			// Only timers and daemons select it: no cause to work out,
			// so no last-handled state to store.
			break
		}
		d.Reason, d.WithResume = changeReason(o.Known, o.Essence, mem.Resumed)
		if d.Reason != "" {
			d.Entries = o.changeEntries(d.Change, d.Reason, d.WithResume)
		}
	}
	return d
}

// WantsFinalizer reports whether a live object needs gopf's finalizer: a
// selected change handler holds objects (a non-optional delete handler), or
// a selected timer or daemon has not finished for good.
func WantsFinalizer(sel Selected, mem Memory) bool {
	return slices.ContainsFunc(sel.Change, contract.HoldsObjects) || len(sel.Spawn) > 0 && mem.SpawnHolds(sel.Spawn)
}

// Finalizers are the finalizers gopf answers for on a kind: its own, and
// that of the Kopf operator gopf takes over from, which it answers for as
// for its own.
type Finalizers struct {
	Own, Kopf string
}

// Holds reports whether obj carries one of the finalizers.
func (f Finalizers) Holds(obj interface{ GetFinalizers() []string }) bool {
	return slices.Contains(obj.GetFinalizers(), f.Own) || slices.Contains(obj.GetFinalizers(), f.Kopf)
}

// Step is what a live object's finalizers need: gopf adds its own where
// neither it nor Kopf's is and want says one is needed, and removes its own
// when nothing needs it. Kopf's goes only with a deletion.
func (f Finalizers) Step(obj interface{ GetFinalizers() []string }, want bool) FinalizerStep {
	own := slices.Contains(obj.GetFinalizers(), f.Own)
	switch {
	case want && !own && !slices.Contains(obj.GetFinalizers(), f.Kopf):
		return FinalizerAdd
	case !want && own:
		return FinalizerRemove
	}
	return FinalizerKept
}

// changeReason is the cause of a live object, from what gopf knows of it
// (known: the stored state, or a newer one not yet written) and its current
// essence: create when nothing was handled, update when the essence differs
// from the last-handled one or an update is unfinished, resume on first
// sight in this process (resumed is false) of a handled object that did not
// change, and "" when there is nothing to do. withResume says that resume
// handlers run too: with the update of an object that changed while the
// operator was down, or on their own.
func changeReason(known *state.State, essence string, resumed bool) (reason handlers.Reason, withResume bool) {
	handled := known != nil && known.Essence != ""
	switch {
	case !handled:
		return handlers.ReasonCreate, false
	case known.Essence != essence || hasUnfinished(known, handlers.ReasonUpdate):
		reason = handlers.ReasonUpdate
	}
	if resumed {
		return reason, false
	}
	if reason == "" {
		reason = handlers.ReasonResume
	}
	return reason, true
}

// hasUnfinished reports unfinished records of a reason.
func hasUnfinished(st *state.State, reason handlers.Reason) bool {
	for _, rec := range st.Progress {
		if rec.Reason == reason && !rec.Finished() {
			return true
		}
	}
	return false
}
