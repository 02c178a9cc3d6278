package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// turn is the working set of one reconcile of one object.
type turn struct {
	k     *kindController
	log   logr.Logger
	obj   client.Object
	raw   map[string]any
	mem   *memory
	store storage
	now   time.Time

	loaded *state // as stored; nil if nothing is
	known  *state // what gopf knows: the stored state, or a newer one it failed to write
	st     *state // as it will be stored

	essence     string // current essence, as JSON (compact if the stored one is: see size.go)
	essenceTree any    // the same, decoded
	full        string // the full essence while essence is compact
	size        int    // the object's size without gopf's state, once measured (size.go)

	patch    spec.Patch
	results  map[string]any // handler id → result, merged into status
	flushing bool           // the turn sends a failed write again (see flush)
	requeue  time.Duration  // the soonest retry, 0 for none
}

// entry is one handler (or sub-handler) scheduled in this turn.
type entry struct {
	reg      *contract.Handler
	opts     spec.Options
	sub      *contract.Handler // a sub-handler of reg, or nil
	old, new any
	diff     spec.Diff
	// handled is what a success is recorded against: the current essence.
	handled string
	// cause is the reason the call gets as Cause.Reason (and its log lines
	// as "cause"); see callReason.
	cause handlers.Reason
	// again says that a finished record does not count: a resume handler
	// runs once per process, and the record of an earlier process's resume
	// stays while an update of the same cause is unfinished.
	again bool
}

// changeCause works out the cause of a live object and runs its handlers.
// It returns the cause (or "" when there is nothing to do).
func (t *turn) changeCause(ctx context.Context, selected []*contract.Handler) handlers.Reason {
	purpose, withResume := changePurpose(t.known, t.essence, t.mem.resumed)
	if purpose == handlers.ReasonCreate {
		// Objects first handled in this process get no resume.
		t.mem.resumed = true
	}
	entries := t.changeEntries(selected, purpose, withResume)
	if purpose == "" {
		return ""
	}
	done := t.runAll(ctx, purpose, entries)
	if withResume && (done || resumesFinished(entries, t.st.Progress)) {
		t.mem.resumed = true
	}
	if done {
		t.st.Essence = t.essence
		t.st.Progress = nil
		if len(entries) > 0 {
			causes.WithLabelValues(t.k.name, string(purpose)).Inc()
			t.log.Info("cause handled", "cause", purpose, "handlers", len(entries))
		}
	}
	return purpose
}

// changeEntries are the entries of the selected change handlers that run
// for the cause purpose, and the resume handlers if withResume.
func (t *turn) changeEntries(selected []*contract.Handler, purpose handlers.Reason, withResume bool) []*entry {
	var base any // the last-handled essence, decoded: only updates need it
	if purpose == handlers.ReasonUpdate && t.known != nil && t.known.Essence != "" {
		base = decodeJSON(t.known.Essence)
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

// resumesFinished reports whether the resume entries among entries have
// finished in records, so that this process does not run them again while
// the rest of the cause is unfinished.
func resumesFinished(entries []*entry, records map[string]*progress) bool {
	for _, e := range entries {
		if e.again {
			if rec := records[e.opts.ID]; rec == nil || !rec.finished() {
				return false
			}
		}
	}
	return true
}

// changePurpose is the cause of a live object, from what gopf knows of it
// (known: the stored state, or a newer one not yet written) and its current
// essence: create when nothing was handled, update when the essence differs
// from the last-handled one or an update is unfinished, resume on first
// sight in this process (resumed is false) of a handled object that did not
// change, and "" when there is nothing to do. withResume says that resume
// handlers run too: with the update of an object that changed while the
// operator was down, or on their own.
func changePurpose(known *state, essence string, resumed bool) (purpose handlers.Reason, withResume bool) {
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

// changeEntry decides whether a registration runs for the cause, and with
// which old and new values.
func (t *turn) changeEntry(r *contract.Handler, purpose handlers.Reason, base any) *entry {
	o := r.Options
	path := o.Field
	fieldHandler := path != nil && reasonOf(r) == handlers.ReasonUpdate
	switch {
	case purpose == handlers.ReasonCreate && reasonOf(r) == handlers.ReasonCreate:
		e := &entry{reg: r, opts: o, new: t.essenceTree, handled: t.essence}
		if path != nil {
			nv, ok := lookup(t.essenceTree, path)
			if !matchField(o, nil, false, nv, ok) {
				return nil
			}
			e.new = nv
		}
		e.diff = diff(nil, e.new) // the root item, as Kopf's create diff
		return e
	case purpose == handlers.ReasonCreate && fieldHandler && r.Kind == spec.KindField:
		// Field handlers see creation with the field set as a change.
		if e := t.createFieldAgain(r, path); e != nil {
			return e
		}
		nv, ok := lookup(t.essenceTree, path)
		if !ok || !matchField(o, nil, false, nv, ok) {
			return nil
		}
		return &entry{reg: r, opts: o, new: nv, diff: diff(nil, nv), handled: t.essence}
	case purpose == handlers.ReasonUpdate && reasonOf(r) == handlers.ReasonUpdate:
		old := base
		// done is the entry of a handler that finished this cause and has
		// nothing newer to handle: its record stays, so that a later turn
		// of the same cause does not take it for a handler that never ran.
		var done *entry
		rec := t.st.Progress[o.ID]
		if rec != nil && rec.Purpose == handlers.ReasonUpdate && rec.finished() {
			done = &entry{reg: r, opts: o, handled: rec.Handled}
			if rec.Handled == t.essence {
				return done
			}
		}
		if rec != nil && rec.Purpose == handlers.ReasonUpdate && rec.Success && rec.Handled != "" {
			old = decodeJSON(rec.Handled)
		}
		e := &entry{reg: r, opts: o, old: old, new: t.essenceTree, handled: t.essence}
		if path != nil {
			ov, oldOK, nv, newOK := fieldValues(path, old, t.essenceTree)
			if oldOK == newOK && sameJSON(ov, nv) || !matchField(o, ov, oldOK, nv, newOK) {
				return done
			}
			e.old, e.new = ov, nv
		}
		e.diff = diff(e.old, e.new)
		if len(e.diff) == 0 {
			return done
		}
		if done != nil {
			delete(t.st.Progress, o.ID) // a newer change: start afresh
		}
		return e
	}
	return nil
}

// createFieldAgain is the entry of a field handler that finished for a
// create that is still unfinished (another create handler retries), or nil
// if it has not finished. Its field may have changed since: then it sees
// that change, from the value it finished on, as it would in an update;
// otherwise its record stays.
func (t *turn) createFieldAgain(r *contract.Handler, path []string) *entry {
	o := r.Options
	rec := t.st.Progress[o.ID]
	if rec == nil || !rec.finished() || rec.Handled == "" {
		return nil
	}
	done := &entry{reg: r, opts: o, handled: rec.Handled}
	if rec.Handled == t.essence {
		return done
	}
	ov, oldOK, nv, newOK := fieldValues(path, decodeJSON(rec.Handled), t.essenceTree)
	if oldOK == newOK && sameJSON(ov, nv) || !matchField(o, ov, oldOK, nv, newOK) {
		return done
	}
	delete(t.st.Progress, o.ID) // a newer change: start afresh
	return &entry{reg: r, opts: o, old: ov, new: nv, diff: diff(ov, nv), handled: t.essence}
}

// deleteCause runs the delete handlers (and resume handlers that run for
// deleted objects, on first sight). It reports whether all are done, so that
// the finalizer can go.
func (t *turn) deleteCause(ctx context.Context, selected []*contract.Handler) bool {
	var entries []*entry
	for _, r := range selected {
		runs := reasonOf(r) == handlers.ReasonDelete ||
			reasonOf(r) == handlers.ReasonResume && r.Options.Deleted && !t.mem.resumed && t.known != nil
		if runs {
			entries = append(entries, &entry{reg: r, opts: r.Options, old: t.essenceTree, handled: t.essence})
		}
	}
	if t.known != nil {
		var dropped []string
		for id, rec := range t.known.Progress {
			if rec.Purpose != handlers.ReasonDelete && !rec.finished() {
				dropped = append(dropped, id)
			}
		}
		if len(dropped) > 0 {
			t.log.Info("deletion supersedes unfinished handlers; they will not run again", "cause", handlers.ReasonDelete, "dropped", dropped)
		}
	}
	return t.runAll(ctx, handlers.ReasonDelete, entries)
}

// runAll runs the entries that are due, records their progress in t.st and
// reports whether every entry is finished.
func (t *turn) runAll(ctx context.Context, purpose handlers.Reason, entries []*entry) bool {
	records := map[string]*progress{}
	done := true
	for _, e := range entries {
		if !t.runEntry(ctx, purpose, e, records) {
			done = false
		}
	}
	t.st.Progress = records
	if len(records) == 0 {
		t.st.Progress = nil
	}
	return done
}

// runEntry runs one entry if it is due (and then its sub-handlers), keeping
// its record in records. It reports whether the entry is finished.
func (t *turn) runEntry(ctx context.Context, purpose handlers.Reason, e *entry, records map[string]*progress) bool {
	id := e.opts.ID
	rec := t.st.Progress[id]
	if rec == nil || (rec.Purpose != purpose && rec.Purpose != e.reason()) || e.again && rec.finished() {
		rec = &progress{Purpose: e.reason(), Started: t.now}
	}
	records[id] = rec
	if rec.finished() || rec.Delayed != nil && rec.Delayed.After(t.now) {
		// Not called this time: its sub-handlers' records stay as they are.
		for childID, child := range t.st.Progress {
			if strings.HasPrefix(childID, id+"/") {
				records[childID] = child
			}
		}
		if rec.finished() {
			return true
		}
		t.soon(rec.Delayed.Sub(t.now))
		return false
	}
	e.cause = e.callReason(purpose)
	c, x := t.newCall(e, rec)
	var waiting *time.Time // when the first sub-handler Execute left unfinished is due
	if x.SubsAllowed {
		x.Execute = func(ctx context.Context, subs []*contract.Handler) spec.SubsOutcome {
			out := t.executeSubs(ctx, purpose, e, subs, records)
			if due := t.now.Add(out.Due); len(out.Unfinished) > 0 && (waiting == nil || due.Before(*waiting)) {
				waiting = &due
			}
			return out
		}
	}
	began := time.Now()
	h := e.reg
	if e.sub != nil {
		h = e.sub
	}
	result, err := t.k.call(ctx, h, t.obj, c)
	if err == nil {
		err = t.checkResult(id, result)
	}
	handlerDuration.WithLabelValues(t.k.name, id).Observe(time.Since(began).Seconds())
	if waiting != nil && waitsForSubs(err) {
		// As with registered sub-handlers: the parent waits for its
		// children without a failed attempt, and is called again, with
		// them, when the first one is due.
		t.keepResult(id, result)
		rec.Delayed = waiting
		return false
	}
	if err == nil {
		subs, subErr := x.Subs, x.SubErr()
		if subErr != nil {
			err = handlers.Permanent(fmt.Errorf("bad sub-handlers: %w", subErr))
		} else if len(subs) > 0 {
			if done, next := t.runSubs(ctx, purpose, e, subs, records); !done {
				// The parent stays unfinished until its children are; it
				// is called again, with them, when the first one is due.
				t.keepResult(id, result)
				rec.Delayed = next
				return false
			}
		}
	}
	t.outcome(e, rec, err)
	if rec.Success {
		t.keepResult(id, result)
	}
	return rec.finished()
}

// runSubs runs the sub-handlers of a parent; it reports whether all are
// finished and, if not, when the first unfinished one is due.
func (t *turn) runSubs(ctx context.Context, purpose handlers.Reason, parent *entry, subs []*contract.Handler, records map[string]*progress) (bool, *time.Time) {
	done := true
	var next *time.Time
	for _, s := range subs {
		e := &entry{reg: parent.reg, opts: s.Options, sub: s, old: parent.old, new: parent.new, diff: parent.diff, handled: parent.handled}
		if t.runEntry(ctx, purpose, e, records) {
			continue
		}
		done = false
		due := t.now
		if d := records[s.Options.ID].Delayed; d != nil {
			due = *d
		}
		if next == nil || due.Before(*next) {
			next = &due
		}
	}
	return done, next
}

// executeSubs runs the sub-handlers a parent's call gives Cause.Execute,
// and tells how they stand.
func (t *turn) executeSubs(ctx context.Context, purpose handlers.Reason, parent *entry, subs []*contract.Handler, records map[string]*progress) spec.SubsOutcome {
	var out spec.SubsOutcome
	if done, next := t.runSubs(ctx, purpose, parent, subs, records); !done {
		out.Due = next.Sub(t.now)
	}
	for _, s := range subs {
		id := s.Options.ID
		switch rec := records[id]; {
		case !rec.finished():
			out.Unfinished = append(out.Unfinished, id)
		case rec.Failure:
			out.Failed = append(out.Failed, spec.SubFailure{ID: id, Message: rec.Message})
		}
	}
	return out
}

// waitsForSubs reports whether a parent's error says it waits for the
// sub-handlers Cause.Execute left unfinished, rather than failing.
func waitsForSubs(err error) bool {
	var perm *handlers.PermanentError
	return errors.Is(err, handlers.ErrSubHandlersUnfinished) && !errors.As(err, &perm)
}

func (e *entry) reason() handlers.Reason { return reasonOf(e.reg) }

// callReason is the Reason a call of the entry gets when the turn handles
// purpose: the handler's own cause, except for field handlers, which run
// for the object's create or update as Kopf's do; that the field appeared
// shows in their Diff (one DiffAdd at the field's root, Old nil).
func (e *entry) callReason(purpose handlers.Reason) handlers.Reason {
	if e.reg.Kind == spec.KindField {
		return purpose
	}
	return e.reason()
}

// reasonOf is the cause a change handler runs for ("" for other kinds).
func reasonOf(h *contract.Handler) handlers.Reason { return handlers.Reason(h.Kind.Reason()) }

func (t *turn) newCall(e *entry, rec *progress) (*handlers.Cause, *contract.Extras) {
	reason := e.cause
	c, x := t.k.baseCall(e.reg, t.obj, withValuesLazily(t.log, "handler", e.opts.ID, "cause", reason, "retry", rec.Retries))
	x.SubsAllowed = e.reg.Kind.Reason() != "" // change handlers
	c.Reason, c.HandlerID, c.Param = reason, e.opts.ID, e.opts.Param
	c.Old, c.New, c.Diff = e.old, e.new, e.diff
	c.Patch = (*handlers.Patch)(&t.patch)
	x.Result = t.result
	c.Retry, c.Started, c.Runtime = rec.Retries, rec.Started, t.now.Sub(rec.Started)
	return c, x
}

// outcome records what a call's error means for the handler (see judge):
// success, a retry after a delay, or a failure.
func (t *turn) outcome(e *entry, rec *progress, err error) {
	log := withValuesLazily(t.log, "handler", e.opts.ID, "cause", e.cause, "retry", rec.Retries)
	rec.Retries++
	rec.Delayed = nil
	v := judge(e.opts, t.k.opts.DefaultBackoff, err, rec.Retries, rec.Started, t.now)
	handlerCalls.WithLabelValues(t.k.name, e.opts.ID, v.outcome.String()).Inc()
	rec.Message = ""
	if v.err != nil {
		rec.Message = v.err.Error()
	}
	switch v.outcome {
	case succeeded:
		rec.Success, rec.Message, rec.Handled = true, "", e.handled
		if v.ignored {
			log.Info("handler failed; the error is ignored as configured", "error", v.err.Error())
		} else {
			log.V(1).Info("handler succeeded")
		}
	case failed:
		rec.Failure, rec.Handled = true, e.handled
		log.Error(v.err, "handler failed permanently")
		t.k.failedForGood(t.obj, e.opts.ID, v.err)
	case retrying:
		next := t.now.Add(v.delay)
		rec.Delayed = &next
		t.soon(v.delay)
		log.Info("handler failed; it will be retried", "error", v.err.Error(), "retryIn", v.delay)
	}
}

func (t *turn) soon(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if t.requeue == 0 || d < t.requeue {
		t.requeue = d
	}
}

func (t *turn) keepResult(id string, result any) {
	if result == nil {
		return
	}
	if t.results == nil {
		t.results = map[string]any{}
	}
	t.results[id] = result
}

// result is a handler's result as the turn's write will leave it: the
// pending result, merged over status.<id> as stored, as decoded JSON (its
// numbers float64, whichever way they came).
func (t *turn) result(id string) (any, bool) {
	status, _ := t.raw["status"].(map[string]any)
	value, found := status[id]
	if pending, ok := t.results[id]; ok {
		patch, err := asJSON(pending)
		if err != nil {
			return nil, false // it cannot be written either
		}
		value, found = patch, true
		if pm, isMap := patch.(map[string]any); isMap {
			base, _ := deepCopyJSON(status[id]).(map[string]any)
			if base == nil {
				base = map[string]any{}
			}
			value = applyMergePatch(base, pm)
		}
	}
	if !found {
		return nil, false
	}
	v, err := asJSON(value)
	return v, err == nil
}

// asJSON returns v as encoding/json decodes its encoding.
func asJSON(v any) (any, error) {
	data, err := jsonMarshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(string(data)), nil
}

// runLevel runs the level handlers on the object.
func (t *turn) runLevel(ctx context.Context, level []*contract.Handler, cause handlers.Reason) (reconcile.Result, error) {
	var res reconcile.Result
	var errs []error
	for _, r := range level {
		c, _ := t.newCall(&entry{reg: r, opts: r.Options, new: t.essenceTree}, &progress{Started: t.now})
		c.Reason = cause
		out, err := t.k.callLevel(ctx, r, t.obj, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if out.RequeueAfter > 0 && (res.RequeueAfter == 0 || out.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = out.RequeueAfter
		}
	}
	return res, errors.Join(errs...)
}

// hasUnfinished reports unfinished records of a purpose.
func hasUnfinished(st *state, purpose handlers.Reason) bool {
	for _, rec := range st.Progress {
		if rec.Purpose == purpose && !rec.finished() {
			return true
		}
	}
	return false
}

func decodeJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil
	}
	return v
}

// sameJSON compares two JSON-like values by their encoding.
func sameJSON(a, b any) bool {
	da, err1 := json.Marshal(a)
	db, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(da) == string(db)
}

// sameState reports whether two states are stored the same (nil and empty
// are the same: nothing stored).
func sameState(a, b *state) bool {
	if a == nil {
		a = &state{}
	}
	if b == nil {
		b = &state{}
	}
	if len(a.Progress) == 0 && len(b.Progress) == 0 {
		return a.Essence == b.Essence // what is stored when a cause is done
	}
	return a.encode() == b.encode()
}
