package engine

import (
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
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
	// routeReleased: this process released its finalizer from the deleted
	// object and the cache does not show it yet; nothing to do.
	routeReleased
)

// FinalizerStep is what a live object's finalizers need before any handler
// runs.
type FinalizerStep int

const (
	finalizerKept FinalizerStep = iota
	FinalizerAdd
	FinalizerRemove
)

// Decision is what one reconcile does with an object. decide works it out
// from the object, what gopf knows of it, the process's memory of it and
// the time, without calling or writing anything; Reconcile carries it out
// and the Planner renders it.
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
	// next is when the first entry that waits for a retry is due; zero if
	// none waits.
	next time.Time
	// Superseded are the handlers whose unfinished records a deletion ends.
	Superseded []string
	// Change, level and spawn are the registrations that select the object.
	Change, Level, Spawn []*contract.Handler
}

// MemoryFacts is what decide needs of the process's memory of an object.
type MemoryFacts struct {
	Resumed  bool // resume handlers are done (or do not apply) in this process
	released bool // this process released its finalizer from the deleted object
	// SpawnHolds reports whether a selected timer or daemon has not
	// finished for good in this process.
	SpawnHolds func(spawn []*contract.Handler) bool
}

// FreshProcess is the memory of a process that has just started: the
// Planner's view of what an operator does on start.
var FreshProcess = MemoryFacts{SpawnHolds: func(spawn []*contract.Handler) bool { return len(spawn) > 0 }}

// Decide works out what a reconcile does with the turn's object (see
// decision). It reads the turn (object, essence, known state, progress
// records, time) and changes nothing.
func (t *Turn) Decide(mem MemoryFacts) Decision {
	k := t.K
	d := Decision{
		Change: k.selected(k.Change, t.Obj, t.Raw),
		Level:  k.selected(k.Level, t.Obj, t.Raw),
		Spawn:  k.selected(k.Spawned, t.Obj, t.Raw),
	}
	held, deleting := k.holds(t.Obj), t.Obj.GetDeletionTimestamp() != nil
	switch {
	case len(d.Change)+len(d.Level)+len(d.Spawn) == 0 && !held:
		d.Route = RouteIgnore
	case deleting && held && mem.released:
		d.Route = routeReleased
	case deleting && held:
		d.Route, d.Reason = RouteDelete, handlers.ReasonDelete
		d.Entries = t.deleteEntries(d.Change, mem.Resumed)
		d.Superseded = t.superseded()
	case deleting:
		d.Route = RouteOthers
	default:
		d.Route = RouteLive
		want := slices.ContainsFunc(d.Change, contract.HoldsObjects) || len(d.Spawn) > 0 && mem.SpawnHolds(d.Spawn)
		d.Finalizer = k.finalizerStep(t.Obj, want)
		if len(d.Change)+len(d.Level) == 0 {
			// Only timers and daemons select it: no cause to work out,
			// so no last-handled state to store.
			break
		}
		d.Reason, d.WithResume = changeReason(t.Known, t.Essence, mem.Resumed)
		if d.Reason != "" {
			d.Entries = t.changeEntries(d.Change, d.Reason, d.WithResume)
		}
	}
	d.next = t.nextDue(d.Reason, d.Entries)
	return d
}

// runsOnDelete reports whether a change handler runs when the object is
// deleted: delete handlers, and resume handlers registered for deleted
// objects on the process's first sight of a handled object.
func runsOnDelete(r *contract.Handler, handled, resumed bool) bool {
	return ReasonOf(r) == handlers.ReasonDelete ||
		ReasonOf(r) == handlers.ReasonResume && r.Options.Deleted && !resumed && handled
}

// finalizerStep is what a live object's finalizers need: gopf adds its own
// where neither it nor Kopf's is and want says one is needed, and removes
// its own when nothing needs it. Kopf's goes only with a deletion.
func (k *KindController) finalizerStep(obj interface{ GetFinalizers() []string }, want bool) FinalizerStep {
	own := slices.Contains(obj.GetFinalizers(), k.Finalizer)
	switch {
	case want && !own && !slices.Contains(obj.GetFinalizers(), k.Opts.KopfFinalizer):
		return FinalizerAdd
	case !want && own:
		return FinalizerRemove
	}
	return finalizerKept
}

// FinalizerAtCreate is decide's finalizer step for a new object, as gopf's
// admission webhook asks it before the object is stored (obj is decoded
// into a NewObject, with the namespace of its create request): the
// finalizer to add, or "" when the object gets none (or gopf does not
// handle its namespace).
func (k *KindController) FinalizerAtCreate(obj client.Object) string {
	if !k.Shared.Scope.Includes(obj.GetNamespace()) {
		return ""
	}
	want := slices.ContainsFunc(k.selected(k.Change, obj, nil), contract.HoldsObjects) ||
		FreshProcess.SpawnHolds(k.selected(k.Spawned, obj, nil))
	if k.finalizerStep(obj, want) != FinalizerAdd {
		return ""
	}
	return k.Finalizer
}

// OfferCreateFinalizer lets gopf's admission webhook add the kind's
// finalizer to new objects (see FinalizerAtCreate) when any handler of the
// kind may need it.
func (k *KindController) OfferCreateFinalizer() {
	if slices.ContainsFunc(k.Change, contract.HoldsObjects) || len(k.Spawned) > 0 {
		k.Shared.operator.AddCreateFinalizer(k.GVK, spec.CreateFinalizer{New: k.NewObject, Decide: k.FinalizerAtCreate})
	}
}

// deleteEntries are the entries of the handlers that run for a deletion.
func (t *Turn) deleteEntries(selected []*contract.Handler, resumed bool) []*Entry {
	var entries []*Entry
	for _, r := range selected {
		if runsOnDelete(r, t.Known != nil, resumed) {
			entries = append(entries, &Entry{Reg: r, Opts: r.Options, old: t.essenceTree, handled: t.Essence})
		}
	}
	return entries
}

// superseded lists, sorted, the handlers whose records a deletion ends
// unfinished: they will not run again.
func (t *Turn) superseded() []string {
	if t.Known == nil {
		return nil
	}
	var ids []string
	for id, rec := range t.Known.Progress {
		if rec.Reason != handlers.ReasonDelete && !rec.Finished() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// nextDue is when the first of the entries that waits for a retry is due,
// or zero.
func (t *Turn) nextDue(reason handlers.Reason, entries []*Entry) time.Time {
	var next time.Time
	for _, e := range entries {
		rec := e.Record(reason, t.St.Progress)
		if rec == nil || rec.Finished() || rec.Delayed == nil || !rec.Delayed.After(t.Now) {
			continue
		}
		if next.IsZero() || rec.Delayed.Before(next) {
			next = *rec.Delayed
		}
	}
	return next
}

// Record is the stored progress record a call of e continues, or nil when
// the call starts afresh: there is no record, it belongs to another cause,
// it is an earlier process's finished resume (e.again), or a newer change
// replaces it (e.fresh).
func (e *Entry) Record(reason handlers.Reason, records map[string]*state.Progress) *state.Progress {
	rec := records[e.Opts.ID]
	if rec == nil || e.fresh || rec.Reason != reason && rec.Reason != e.reason() || e.again && rec.Finished() {
		return nil
	}
	return rec
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

// changeEntries are the entries of the selected change handlers that run
// for the cause reason, and the resume handlers if withResume.
func (t *Turn) changeEntries(selected []*contract.Handler, reason handlers.Reason, withResume bool) []*Entry {
	var base any // the last-handled essence, decoded: only updates need it
	if reason == handlers.ReasonUpdate && t.Known != nil && t.Known.Essence != "" {
		base = state.DecodeJSON(t.Known.Essence)
	}
	var entries []*Entry
	for _, r := range selected {
		if e := t.changeEntry(r, reason, base); e != nil {
			entries = append(entries, e)
		}
	}
	if withResume {
		for _, r := range selected {
			if ReasonOf(r) == handlers.ReasonResume && !hasEntry(entries, r.Options.ID) { // stacked on an update: once
				entries = append(entries, &Entry{Reg: r, Opts: r.Options, new: t.essenceTree, handled: t.Essence, again: true})
			}
		}
	}
	return entries
}

// changeEntry decides whether a registration runs for the cause, and with
// which old and new values.
func (t *Turn) changeEntry(r *contract.Handler, reason handlers.Reason, base any) *Entry {
	switch {
	case reason == handlers.ReasonCreate && ReasonOf(r) == handlers.ReasonCreate:
		return t.createEntry(r)
	case reason == handlers.ReasonCreate && r.Kind == spec.KindField:
		// Field handlers see creation with the field set as a change.
		if e := t.createFieldAgain(r); e != nil {
			return e
		}
		nv, ok := state.Lookup(t.essenceTree, r.Options.Field)
		if !ok || !matchField(r.Options, nil, false, nv, ok) {
			return nil
		}
		return &Entry{Reg: r, Opts: r.Options, new: nv, diff: state.Diff(nil, nv), handled: t.Essence}
	case reason == handlers.ReasonUpdate && ReasonOf(r) == handlers.ReasonUpdate:
		return t.updateEntry(r, base)
	}
	return nil
}

// createEntry is the entry of a create handler, or nil when its field
// filters refuse the object.
func (t *Turn) createEntry(r *contract.Handler) *Entry {
	o := r.Options
	e := &Entry{Reg: r, Opts: o, new: t.essenceTree, handled: t.Essence}
	if o.Field != nil {
		nv, ok := state.Lookup(t.essenceTree, o.Field)
		if !matchField(o, nil, false, nv, ok) {
			return nil
		}
		e.new = nv
	}
	e.diff = state.Diff(nil, e.new) // the root item, as Kopf's create diff
	return e
}

// updateEntry is the entry of an update handler (field handlers included)
// for the change from base, the last-handled essence, or from what the
// handler finished on if that is newer; nil when it has nothing to handle.
func (t *Turn) updateEntry(r *contract.Handler, base any) *Entry {
	o := r.Options
	old := base
	// done is the entry of a handler that finished this cause and has
	// nothing newer to handle: its record stays, so that a later turn of
	// the same cause does not take it for a handler that never ran.
	var done *Entry
	rec := t.St.Progress[o.ID]
	if rec != nil && rec.Reason == handlers.ReasonUpdate && rec.Finished() {
		done = &Entry{Reg: r, Opts: o, handled: rec.Handled}
		if rec.Handled == t.Essence {
			return done
		}
	}
	if rec != nil && rec.Reason == handlers.ReasonUpdate && rec.Success && rec.Handled != "" {
		old = state.DecodeJSON(rec.Handled)
	}
	return t.changeFrom(r, old, done)
}

// changeFrom is the entry of handler r for the change from old to the
// turn's essence (of its field, for a field handler), or done, the entry of
// a handler that has already finished (nil if none), when nothing it
// watches changed.
func (t *Turn) changeFrom(r *contract.Handler, old any, done *Entry) *Entry {
	o := r.Options
	e := &Entry{Reg: r, Opts: o, old: old, new: t.essenceTree, handled: t.Essence, fresh: done != nil}
	if o.Field != nil {
		ov, oldOK, nv, newOK := fieldValues(o.Field, old, t.essenceTree)
		if oldOK == newOK && state.SameJSON(ov, nv) || !matchField(o, ov, oldOK, nv, newOK) {
			return done
		}
		e.old, e.new = ov, nv
	}
	e.diff = state.Diff(e.old, e.new)
	if len(e.diff) == 0 {
		return done
	}
	return e
}

// createFieldAgain is the entry of a field handler that finished for a
// create that is still unfinished (another create handler retries), or nil
// if it has not finished. Its field may have changed since: then it sees
// that change, from the value it finished on, as it would in an update;
// otherwise its record stays.
func (t *Turn) createFieldAgain(r *contract.Handler) *Entry {
	o := r.Options
	rec := t.St.Progress[o.ID]
	if rec == nil || !rec.Finished() || rec.Handled == "" {
		return nil
	}
	done := &Entry{Reg: r, Opts: o, handled: rec.Handled}
	if rec.Handled == t.Essence {
		return done
	}
	return t.changeFrom(r, state.DecodeJSON(rec.Handled), done)
}
