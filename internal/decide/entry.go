package decide

import (
	"slices"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Entry is one handler (or sub-handler) scheduled for a cause.
type Entry struct {
	Reg  *contract.Handler
	Opts spec.Options
	// Sub is a sub-handler of Reg, or nil.
	Sub *contract.Handler
	// Old, New and Diff are what the call sees of the change.
	Old, New any
	Diff     spec.Diff
	// Handled is what a success is recorded against: the current essence.
	Handled string
	// Again says that a finished record does not count: a resume handler
	// runs once per process, and the record of an earlier process's resume
	// stays while an update of the same cause is unfinished.
	Again bool
	// Fresh says that the entry handles a newer change than the one its
	// finished record is for: the call starts a new record.
	Fresh bool
}

// Record is the stored progress record a call of e continues, or nil when
// the call starts afresh: there is no record, it belongs to another cause,
// it is an earlier process's finished resume (e.Again), or a newer change
// replaces it (e.Fresh).
func (e *Entry) Record(reason handlers.Reason, records map[string]*state.Progress) *state.Progress {
	rec := records[e.Opts.ID]
	if rec == nil || e.Fresh || rec.Reason != reason && rec.Reason != e.Reason() || e.Again && rec.Finished() {
		return nil
	}
	return rec
}

// Reason is the cause the entry's handler runs for.
func (e *Entry) Reason() handlers.Reason { return ReasonOf(e.Reg) }

// CallReason is the Reason a call of the entry gets when the reconcile
// handles reason: the handler's own cause, except for field handlers,
// which run for the object's create or update as Kopf's do; that the field
// appeared shows in their Diff (one DiffAdd at the field's root, Old nil).
func (e *Entry) CallReason(reason handlers.Reason) handlers.Reason {
	if e.Reg.Kind == spec.KindField {
		return reason
	}
	return e.Reason()
}

// ReasonOf is the cause a change handler runs for ("" for other kinds).
func ReasonOf(h *contract.Handler) handlers.Reason { return handlers.Reason(h.Kind.Reason()) }

// runsOnDelete reports whether a change handler runs when the object is
// deleted: delete handlers, and resume handlers registered for deleted
// objects on the process's first sight of a handled object.
func runsOnDelete(r *contract.Handler, handled, resumed bool) bool {
	return ReasonOf(r) == handlers.ReasonDelete ||
		ReasonOf(r) == handlers.ReasonResume && r.Options.Deleted && !resumed && handled
}

// deleteEntries are the entries of the handlers that run for a deletion.
func (o *Object) deleteEntries(selected []*contract.Handler, resumed bool) []*Entry {
	var entries []*Entry
	for _, r := range selected {
		if runsOnDelete(r, o.Known != nil, resumed) {
			entries = append(entries, &Entry{Reg: r, Opts: r.Options, Old: o.Tree, Handled: o.Essence})
		}
	}
	return entries
}

// superseded lists, sorted, the handlers whose records a deletion ends
// unfinished: they will not run again.
func (o *Object) superseded() []string {
	if o.Known == nil {
		return nil
	}
	var ids []string
	for id, rec := range o.Known.Progress {
		if rec.Reason != handlers.ReasonDelete && !rec.Finished() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// changeEntries are the entries of the selected change handlers that run
// for the cause reason, and the resume handlers if withResume.
func (o *Object) changeEntries(selected []*contract.Handler, reason handlers.Reason, withResume bool) []*Entry {
	var base any // the last-handled essence, decoded: only updates need it
	if reason == handlers.ReasonUpdate && o.Known != nil && o.Known.Essence != "" {
		base = state.DecodeJSON(o.Known.Essence)
	}
	var entries []*Entry
	for _, r := range selected {
		if e := o.changeEntry(r, reason, base); e != nil {
			entries = append(entries, e)
		}
	}
	if withResume {
		for _, r := range selected {
			if ReasonOf(r) == handlers.ReasonResume && !hasEntry(entries, r.Options.ID) { // stacked on an update: once
				entries = append(entries, &Entry{Reg: r, Opts: r.Options, New: o.Tree, Handled: o.Essence, Again: true})
			}
		}
	}
	return entries
}

// changeEntry decides whether a registration runs for the cause, and with
// which old and new values.
func (o *Object) changeEntry(r *contract.Handler, reason handlers.Reason, base any) *Entry {
	switch {
	case reason == handlers.ReasonCreate && ReasonOf(r) == handlers.ReasonCreate:
		return o.createEntry(r)
	case reason == handlers.ReasonCreate && r.Kind == spec.KindField:
		// Field handlers see creation with the field set as a change.
		if e := o.createFieldAgain(r); e != nil {
			return e
		}
		nv, ok := state.Lookup(o.Tree, r.Options.Field)
		if !ok || !matchField(r.Options, nil, false, nv, ok) {
			return nil
		}
		return &Entry{Reg: r, Opts: r.Options, New: nv, Diff: state.Diff(nil, nv), Handled: o.Essence}
	case reason == handlers.ReasonUpdate && ReasonOf(r) == handlers.ReasonUpdate:
		return o.updateEntry(r, base)
	}
	return nil
}

// createEntry is the entry of a create handler, or nil when its field
// filters refuse the object.
func (o *Object) createEntry(r *contract.Handler) *Entry {
	opts := r.Options
	e := &Entry{Reg: r, Opts: opts, New: o.Tree, Handled: o.Essence}
	if opts.Field != nil {
		nv, ok := state.Lookup(o.Tree, opts.Field)
		if !matchField(opts, nil, false, nv, ok) {
			return nil
		}
		e.New = nv
	}
	e.Diff = state.Diff(nil, e.New) // the root item, as Kopf's create diff
	return e
}

// updateEntry is the entry of an update handler (field handlers included)
// for the change from base, the last-handled essence, or from what the
// handler finished on if that is newer; nil when it has nothing to handle.
func (o *Object) updateEntry(r *contract.Handler, base any) *Entry {
	opts := r.Options
	old := base
	// done is the entry of a handler that finished this cause and has
	// nothing newer to handle: its record stays, so that a later reconcile
	// of the same cause does not take it for a handler that never ran.
	var done *Entry
	rec := o.Records[opts.ID]
	if rec != nil && rec.Reason == handlers.ReasonUpdate && rec.Finished() {
		done = &Entry{Reg: r, Opts: opts, Handled: rec.Handled}
		if rec.Handled == o.Essence {
			return done
		}
	}
	if rec != nil && rec.Reason == handlers.ReasonUpdate && rec.Success && rec.Handled != "" {
		old = state.DecodeJSON(rec.Handled)
	}
	return o.changeFrom(r, old, done)
}

// changeFrom is the entry of handler r for the change from old to the
// object's essence (of its field, for a field handler), or done, the entry
// of a handler that has already finished (nil if none), when nothing it
// watches changed.
func (o *Object) changeFrom(r *contract.Handler, old any, done *Entry) *Entry {
	opts := r.Options
	e := &Entry{Reg: r, Opts: opts, Old: old, New: o.Tree, Handled: o.Essence, Fresh: done != nil}
	if opts.Field != nil {
		ov, oldOK, nv, newOK := fieldValues(opts.Field, old, o.Tree)
		if oldOK == newOK && state.SameJSON(ov, nv) || !matchField(opts, ov, oldOK, nv, newOK) {
			return done
		}
		e.Old, e.New = ov, nv
	}
	e.Diff = state.Diff(e.Old, e.New)
	if len(e.Diff) == 0 {
		return done
	}
	return e
}

// createFieldAgain is the entry of a field handler that finished for a
// create that is still unfinished (another create handler retries), or nil
// if it has not finished. Its field may have changed since: then it sees
// that change, from the value it finished on, as it would in an update;
// otherwise its record stays.
func (o *Object) createFieldAgain(r *contract.Handler) *Entry {
	opts := r.Options
	rec := o.Records[opts.ID]
	if rec == nil || !rec.Finished() || rec.Handled == "" {
		return nil
	}
	done := &Entry{Reg: r, Opts: opts, Handled: rec.Handled}
	if rec.Handled == o.Essence {
		return done
	}
	return o.changeFrom(r, state.DecodeJSON(rec.Handled), done)
}

// hasEntry reports whether entries has one of the handler id: a resume
// handler that shares its id with an update handler (Kopf's stacked
// decorators) runs as that update handler when both would run.
func hasEntry(entries []*Entry, id string) bool {
	for _, e := range entries {
		if e.Reg.Options.ID == id {
			return true
		}
	}
	return false
}
