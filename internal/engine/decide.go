package engine

import (
	"slices"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// route is the way one reconcile takes through an object.
type route int

const (
	// routeIgnore: no handler selects the object and no finalizer gopf
	// answers for holds it; gopf leaves it alone.
	routeIgnore route = iota
	// routeLive: a live object; the finalizer step, the cause's change
	// handlers, timers and daemons as selected, then the level handlers.
	routeLive
	// routeDelete: the deletion started and gopf's (or Kopf's) finalizer
	// holds the object; the delete handlers, then the finalizer goes.
	routeDelete
	// routeOthers: the deletion started and only other controllers'
	// finalizers hold the object; its timers and daemons stop, the level
	// handlers run.
	routeOthers
	// routeReleased: this process released its finalizer from the deleted
	// object and the cache does not show it yet; nothing to do.
	routeReleased
)

// finalizerStep is what a live object's finalizers need before any handler
// runs.
type finalizerStep int

const (
	finalizerKept finalizerStep = iota
	finalizerAdd
	finalizerRemove
)

// decision is what one reconcile does with an object. decide works it out
// from the object, what gopf knows of it, the process's memory of it and
// the time, without calling or writing anything; Reconcile carries it out
// and the Planner renders it.
type decision struct {
	route     route
	finalizer finalizerStep
	// purpose is the cause the change or delete handlers run for ("" for
	// none); level handlers get it as their Reason.
	purpose handlers.Reason
	// withResume: resume handlers run, on the process's first sight of a
	// handled object.
	withResume bool
	// entries are the handlers of the cause, in registration order.
	entries []*entry
	// next is when the first entry that waits for a retry is due; zero if
	// none waits.
	next time.Time
	// superseded are the handlers whose unfinished records a deletion ends.
	superseded []string
	// change, level and spawn are the registrations that select the object.
	change, level, spawn []*contract.Handler
}

// memoryFacts is what decide needs of the process's memory of an object.
type memoryFacts struct {
	resumed  bool // resume handlers are done (or do not apply) in this process
	released bool // this process released its finalizer from the deleted object
	// spawnHolds reports whether a selected timer or daemon has not
	// finished for good in this process.
	spawnHolds func(spawn []*contract.Handler) bool
}

// freshProcess is the memory of a process that has just started: the
// Planner's view of what an operator does on start.
var freshProcess = memoryFacts{spawnHolds: func(spawn []*contract.Handler) bool { return len(spawn) > 0 }}

// decide works out what a reconcile does with the turn's object (see
// decision). It reads the turn (object, essence, known state, progress
// records, time) and changes nothing.
func (t *turn) decide(mem memoryFacts) decision {
	k := t.k
	d := decision{
		change: k.selected(k.change, t.obj, t.raw),
		level:  k.selected(k.level, t.obj, t.raw),
		spawn:  k.selected(k.spawned, t.obj, t.raw),
	}
	held, deleting := k.holds(t.obj), t.obj.GetDeletionTimestamp() != nil
	switch {
	case len(d.change)+len(d.level)+len(d.spawn) == 0 && !held:
		d.route = routeIgnore
	case deleting && held && mem.released:
		d.route = routeReleased
	case deleting && held:
		d.route, d.purpose = routeDelete, handlers.ReasonDelete
		d.entries = t.deleteEntries(d.change, mem.resumed)
		d.superseded = t.superseded()
	case deleting:
		d.route = routeOthers
	default:
		d.route = routeLive
		want := slices.ContainsFunc(d.change, contract.HoldsObjects) || len(d.spawn) > 0 && mem.spawnHolds(d.spawn)
		d.finalizer = k.finalizerStep(t.obj, want)
		d.purpose, d.withResume = changePurpose(t.known, t.essence, mem.resumed)
		if d.purpose != "" {
			d.entries = t.changeEntries(d.change, d.purpose, d.withResume)
		}
	}
	d.next = t.nextDue(d.purpose, d.entries)
	return d
}

// runsOnDelete reports whether a change handler runs when the object is
// deleted: delete handlers, and resume handlers registered for deleted
// objects on the process's first sight of a handled object.
func runsOnDelete(r *contract.Handler, handled, resumed bool) bool {
	return reasonOf(r) == handlers.ReasonDelete ||
		reasonOf(r) == handlers.ReasonResume && r.Options.Deleted && !resumed && handled
}

// finalizerStep is what a live object's finalizers need: gopf adds its own
// where neither it nor Kopf's is and want says one is needed, and removes
// its own when nothing needs it. Kopf's goes only with a deletion.
func (k *kindController) finalizerStep(obj interface{ GetFinalizers() []string }, want bool) finalizerStep {
	own := slices.Contains(obj.GetFinalizers(), k.finalizer)
	switch {
	case want && !own && !slices.Contains(obj.GetFinalizers(), k.opts.KopfFinalizer):
		return finalizerAdd
	case !want && own:
		return finalizerRemove
	}
	return finalizerKept
}

// deleteEntries are the entries of the handlers that run for a deletion.
func (t *turn) deleteEntries(selected []*contract.Handler, resumed bool) []*entry {
	var entries []*entry
	for _, r := range selected {
		if runsOnDelete(r, t.known != nil, resumed) {
			entries = append(entries, &entry{reg: r, opts: r.Options, old: t.essenceTree, handled: t.essence})
		}
	}
	return entries
}

// superseded lists, sorted, the handlers whose records a deletion ends
// unfinished: they will not run again.
func (t *turn) superseded() []string {
	if t.known == nil {
		return nil
	}
	var ids []string
	for id, rec := range t.known.Progress {
		if rec.Purpose != handlers.ReasonDelete && !rec.Finished() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// nextDue is when the first of the entries that waits for a retry is due,
// or zero.
func (t *turn) nextDue(purpose handlers.Reason, entries []*entry) time.Time {
	var next time.Time
	for _, e := range entries {
		rec := e.record(purpose, t.st.Progress)
		if rec == nil || rec.Finished() || rec.Delayed == nil || !rec.Delayed.After(t.now) {
			continue
		}
		if next.IsZero() || rec.Delayed.Before(next) {
			next = *rec.Delayed
		}
	}
	return next
}

// record is the stored progress record a call of e continues, or nil when
// the call starts afresh: there is no record, it belongs to another cause,
// it is an earlier process's finished resume (e.again), or a newer change
// replaces it (e.fresh).
func (e *entry) record(purpose handlers.Reason, records map[string]*state.Progress) *state.Progress {
	rec := records[e.opts.ID]
	if rec == nil || e.fresh || rec.Purpose != purpose && rec.Purpose != e.reason() || e.again && rec.Finished() {
		return nil
	}
	return rec
}

// changePurpose is the cause of a live object, from what gopf knows of it
// (known: the stored state, or a newer one not yet written) and its current
// essence: create when nothing was handled, update when the essence differs
// from the last-handled one or an update is unfinished, resume on first
// sight in this process (resumed is false) of a handled object that did not
// change, and "" when there is nothing to do. withResume says that resume
// handlers run too: with the update of an object that changed while the
// operator was down, or on their own.
func changePurpose(known *state.State, essence string, resumed bool) (purpose handlers.Reason, withResume bool) {
	handled := known != nil && known.Essence != ""
	switch {
	case !handled:
		return handlers.ReasonCreate, false
	case known.Essence != essence || hasUnfinished(known, handlers.ReasonUpdate):
		purpose = handlers.ReasonUpdate
	}
	if resumed {
		return purpose, false
	}
	if purpose == "" {
		purpose = handlers.ReasonResume
	}
	return purpose, true
}

// changeEntries are the entries of the selected change handlers that run
// for the cause purpose, and the resume handlers if withResume.
func (t *turn) changeEntries(selected []*contract.Handler, purpose handlers.Reason, withResume bool) []*entry {
	var base any // the last-handled essence, decoded: only updates need it
	if purpose == handlers.ReasonUpdate && t.known != nil && t.known.Essence != "" {
		base = state.DecodeJSON(t.known.Essence)
	}
	var entries []*entry
	for _, r := range selected {
		if e := t.changeEntry(r, purpose, base); e != nil {
			entries = append(entries, e)
		}
	}
	if withResume {
		for _, r := range selected {
			if reasonOf(r) == handlers.ReasonResume && !hasEntry(entries, r.Options.ID) { // stacked on an update: once
				entries = append(entries, &entry{reg: r, opts: r.Options, new: t.essenceTree, handled: t.essence, again: true})
			}
		}
	}
	return entries
}

// changeEntry decides whether a registration runs for the cause, and with
// which old and new values.
func (t *turn) changeEntry(r *contract.Handler, purpose handlers.Reason, base any) *entry {
	switch {
	case purpose == handlers.ReasonCreate && reasonOf(r) == handlers.ReasonCreate:
		return t.createEntry(r)
	case purpose == handlers.ReasonCreate && r.Kind == spec.KindField:
		// Field handlers see creation with the field set as a change.
		if e := t.createFieldAgain(r); e != nil {
			return e
		}
		nv, ok := state.Lookup(t.essenceTree, r.Options.Field)
		if !ok || !matchField(r.Options, nil, false, nv, ok) {
			return nil
		}
		return &entry{reg: r, opts: r.Options, new: nv, diff: state.Diff(nil, nv), handled: t.essence}
	case purpose == handlers.ReasonUpdate && reasonOf(r) == handlers.ReasonUpdate:
		return t.updateEntry(r, base)
	}
	return nil
}

// createEntry is the entry of a create handler, or nil when its field
// filters refuse the object.
func (t *turn) createEntry(r *contract.Handler) *entry {
	o := r.Options
	e := &entry{reg: r, opts: o, new: t.essenceTree, handled: t.essence}
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
func (t *turn) updateEntry(r *contract.Handler, base any) *entry {
	o := r.Options
	old := base
	// done is the entry of a handler that finished this cause and has
	// nothing newer to handle: its record stays, so that a later turn of
	// the same cause does not take it for a handler that never ran.
	var done *entry
	rec := t.st.Progress[o.ID]
	if rec != nil && rec.Purpose == handlers.ReasonUpdate && rec.Finished() {
		done = &entry{reg: r, opts: o, handled: rec.Handled}
		if rec.Handled == t.essence {
			return done
		}
	}
	if rec != nil && rec.Purpose == handlers.ReasonUpdate && rec.Success && rec.Handled != "" {
		old = state.DecodeJSON(rec.Handled)
	}
	e := &entry{reg: r, opts: o, old: old, new: t.essenceTree, handled: t.essence, fresh: done != nil}
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
func (t *turn) createFieldAgain(r *contract.Handler) *entry {
	o := r.Options
	rec := t.st.Progress[o.ID]
	if rec == nil || !rec.Finished() || rec.Handled == "" {
		return nil
	}
	done := &entry{reg: r, opts: o, handled: rec.Handled}
	if rec.Handled == t.essence {
		return done
	}
	ov, oldOK, nv, newOK := fieldValues(o.Field, state.DecodeJSON(rec.Handled), t.essenceTree)
	if oldOK == newOK && state.SameJSON(ov, nv) || !matchField(o, ov, oldOK, nv, newOK) {
		return done
	}
	return &entry{reg: r, opts: o, old: ov, new: nv, diff: state.Diff(ov, nv), handled: t.essence, fresh: true}
}
