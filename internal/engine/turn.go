package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// turn is the working set of one reconcile of one object.
type turn struct {
	k     *KindController
	log   logr.Logger
	obj   client.Object
	raw   map[string]any
	mem   *memory.Memory
	store state.Storage
	now   time.Time

	loaded *state.State // as stored; nil if nothing is
	known  *state.State // what gopf knows: the stored state, or a newer one it failed to write
	st     *state.State // as it will be stored

	essence     string // current essence, as JSON (compact if the stored one is: see size.go)
	essenceTree any    // the same, decoded
	full        string // the full essence while essence is compact
	size        int    // the object's size without gopf's state, once measured (size.go)

	patch     spec.Patch
	results   map[string]any // handler id → result, merged into status
	flushing  bool           // the turn sends a failed write again (see flush)
	ownLanded bool           // the handlers' own object patch landed; the state's status write is due (see sendStateLast)
	// unreadable says that some place holds state that cannot be read:
	// the turn's write stores the state even if it did not change, which
	// replaces the unreadable value (see LoadState).
	unreadable bool
	requeue    time.Duration // the soonest retry, 0 for none
	// quiet are the handlers whose record changed only by a retry that
	// need not be stored yet (see quietRetry).
	quiet map[string]bool
}

// changeCause runs the change handlers of a live object's cause, as
// decided, and records the cause as handled once all are finished.
func (t *turn) changeCause(ctx context.Context, d decide.Decision) {
	if d.Reason == handlers.ReasonCreate {
		// Objects first handled in this process get no resume.
		t.mem.Resumed = true
	}
	if d.Reason == "" {
		return
	}
	done := t.runAll(ctx, d.Reason, d.Entries)
	if d.WithResume && (done || resumesFinished(d.Entries, t.st.Progress)) {
		t.mem.Resumed = true
	}
	if done {
		if d.Reason == handlers.ReasonCreate {
			t.st.Essence, t.st.Progress = t.createHandled(d.Entries)
		} else {
			t.st.Essence, t.st.Progress = t.essence, nil
		}
		if len(d.Entries) > 0 {
			metrics.Causes.WithLabelValues(t.k.Name, string(d.Reason)).Inc()
			t.log.Info("cause handled", "cause", d.Reason, "handlers", len(d.Entries))
		}
	}
}

// createHandled is the state that records a finished create: handled on
// the essence a create handler finished on, so that a change made since
// (while another handler of the create retried) reaches the update
// handlers, with the records of the field handlers that finished on a
// newer essence, so that they see only what they have not seen: records
// of the update that follows, whatever purpose they had (Kopf's format
// gives every record of an object not handled yet the purpose create).
// Without such a change it is the current essence and no records.
func (t *turn) createHandled(entries []*decide.Entry) (string, map[string]*state.Progress) {
	handled := t.essence
	for _, e := range entries {
		if rec := t.st.Progress[e.Opts.ID]; e.Reason() == handlers.ReasonCreate && rec != nil && rec.Handled != "" && rec.Handled != t.essence {
			handled = rec.Handled
			break
		}
	}
	if handled == t.essence {
		return handled, nil // field handlers saw any change of their field (createFieldAgain)
	}
	var kept map[string]*state.Progress
	for _, e := range entries {
		if rec := t.st.Progress[e.Opts.ID]; e.Reason() == handlers.ReasonUpdate && rec != nil && rec.Handled != "" && rec.Handled != handled {
			if kept == nil {
				kept = map[string]*state.Progress{}
			}
			r := *rec
			r.Reason = handlers.ReasonUpdate
			kept[e.Opts.ID] = &r
		}
	}
	return handled, kept
}

// resumesFinished reports whether the resume entries among entries have
// finished in records, so that this process does not run them again while
// the rest of the cause is unfinished.
func resumesFinished(entries []*decide.Entry, records map[string]*state.Progress) bool {
	for _, e := range entries {
		if e.Again {
			if rec := records[e.Opts.ID]; rec == nil || !rec.Finished() {
				return false
			}
		}
	}
	return true
}

// deleteCause runs the delete handlers (and resume handlers that run for
// deleted objects, on first sight), as decided. It reports whether all are
// done, so that the finalizer can go.
func (t *turn) deleteCause(ctx context.Context, d decide.Decision) bool {
	if len(d.Superseded) > 0 {
		t.log.Info("deletion supersedes unfinished handlers; they will not run again", "cause", handlers.ReasonDelete, "dropped", d.Superseded)
	}
	return t.runAll(ctx, handlers.ReasonDelete, d.Entries)
}

// runAll runs the entries that are due, records their progress in t.st and
// reports whether every entry is finished.
func (t *turn) runAll(ctx context.Context, reason handlers.Reason, entries []*decide.Entry) bool {
	records := map[string]*state.Progress{}
	done := true
	for _, e := range entries {
		if !t.runEntry(ctx, reason, e, records) {
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
func (t *turn) runEntry(ctx context.Context, reason handlers.Reason, e *decide.Entry, records map[string]*state.Progress) bool {
	id := e.Opts.ID
	rec := e.Record(reason, t.st.Progress)
	if rec == nil {
		rec = &state.Progress{Reason: e.Reason(), Started: t.now}
	}
	records[id] = rec
	if rec.Finished() || rec.Delayed != nil && rec.Delayed.After(t.now) {
		return t.notDue(id, rec, records)
	}
	if ctx.Err() != nil {
		return false // the operator stops: nothing new starts, and the record stays as it was
	}
	result, x, waiting, err := t.callEntry(ctx, reason, e, rec, records)
	if err != nil && ctx.Err() != nil {
		// The operator stops and cancelled the call: it is not an attempt
		// (no retry counted, no backoff), and whoever handles the object
		// next calls the handler again at once.
		t.log.Info("handler call cut short by the operator's stop; it runs again when the object is next handled",
			"handler", id, "error", err.Error())
		return false
	}
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
			if done, next := t.runSubs(ctx, reason, e, subs, records); !done {
				// The parent stays unfinished until its children are; it
				// is called again, with them, when the first one is due.
				t.keepResult(id, result)
				rec.Delayed = next
				return false
			}
		}
	}
	t.outcome(e, e.CallReason(reason), rec, err)
	if rec.Success {
		t.keepResult(id, result)
	}
	return rec.Finished()
}

// notDue keeps the record of an entry that is not called this time, and
// its sub-handlers' records as they are; it reports whether the entry is
// finished, and otherwise asks for a reconcile when it is due.
func (t *turn) notDue(id string, rec *state.Progress, records map[string]*state.Progress) bool {
	for childID, child := range t.st.Progress {
		if strings.HasPrefix(childID, id+"/") {
			records[childID] = child
		}
	}
	if rec.Finished() {
		return true
	}
	t.soon(rec.Delayed.Sub(t.now))
	return false
}

// callEntry calls the entry's handler once and checks its result. It also
// returns the call's extras (the sub-handlers it registered) and, if the
// handler ran sub-handlers through Cause.Execute that are unfinished, when
// the first of them is due.
func (t *turn) callEntry(
	ctx context.Context, reason handlers.Reason, e *decide.Entry, rec *state.Progress, records map[string]*state.Progress,
) (any, *contract.Extras, *time.Time, error) {
	c, x := t.newCall(e, e.CallReason(reason), rec)
	var waiting *time.Time
	if x.SubsAllowed {
		x.Execute = func(ctx context.Context, subs []*contract.Handler) spec.SubsOutcome {
			out := t.executeSubs(ctx, reason, e, subs, records)
			if due := t.now.Add(out.Due); len(out.Unfinished) > 0 && (waiting == nil || due.Before(*waiting)) {
				waiting = &due
			}
			return out
		}
	}
	began := time.Now()
	h := e.Reg
	if e.Sub != nil {
		h = e.Sub
	}
	result, err := t.k.Call(ctx, h, t.obj, c)
	if err == nil {
		err = t.checkResult(e.Opts.ID, result)
	}
	metrics.HandlerDuration.WithLabelValues(t.k.Name, e.Opts.ID).Observe(time.Since(began).Seconds())
	return result, x, waiting, err
}

// runSubs runs the sub-handlers of a parent; it reports whether all are
// finished and, if not, when the first unfinished one is due.
func (t *turn) runSubs(
	ctx context.Context, reason handlers.Reason, parent *decide.Entry, subs []*contract.Handler, records map[string]*state.Progress,
) (bool, *time.Time) {
	done := true
	var next *time.Time
	for _, s := range subs {
		e := &decide.Entry{Reg: parent.Reg, Opts: s.Options, Sub: s, Old: parent.Old, New: parent.New, Diff: parent.Diff, Handled: parent.Handled}
		if t.runEntry(ctx, reason, e, records) {
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
func (t *turn) executeSubs(ctx context.Context, reason handlers.Reason, parent *decide.Entry, subs []*contract.Handler,
	records map[string]*state.Progress) spec.SubsOutcome {
	var out spec.SubsOutcome
	if done, next := t.runSubs(ctx, reason, parent, subs, records); !done {
		out.Due = next.Sub(t.now)
	}
	for _, s := range subs {
		id := s.Options.ID
		switch rec := records[id]; {
		case !rec.Finished():
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
		patch, err := state.AsJSON(pending)
		if err != nil {
			return nil, false // it cannot be written either
		}
		value, found = patch, true
		if pm, isMap := patch.(map[string]any); isMap {
			base, _ := state.DeepCopyJSON(status[id]).(map[string]any)
			if base == nil {
				base = map[string]any{}
			}
			value = state.ApplyMergePatch(base, pm)
		}
	}
	if !found {
		return nil, false
	}
	v, err := state.AsJSON(value)
	return v, err == nil
}
