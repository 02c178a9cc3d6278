package robustness

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gopf-dev/gopf/handlers"
)

// Violation is one breach of the contract that Check found.
type Violation struct {
	// Rule names the promise broken, such as "create once".
	Rule string
	// Object is the object's name.
	Object string
	// Message says what happened.
	Message string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s: %s", v.Rule, v.Object, v.Message) }

// The rules Check enforces, as Violation.Rule names them.
const (
	RuleCreateOnce     = "create once"
	RuleCreateDone     = "create done"
	RuleUpdateLost     = "update lost"
	RuleUpdateSpurious = "update for no change"
	RuleDeleteOnce     = "delete once"
	RuleResumeOnce     = "resume once per process"
	RuleFinalizer      = "no finalizer left"
	RuleForeign        = "other finalizers kept"
	RuleWrites         = "write budget"
)

// Check judges a history against Kopf's contract, as gopf promises it, and
// returns every breach it finds, or none. It is a pure function of the
// history:
//
//   - create handlers finish (succeed or fail for good) exactly once per
//     object lifetime (UID): an object that lived to the end had one, and no
//     create handler ran again after one finished;
//   - update handlers see every change: an object whose values at the end
//     differ from what its create handler saw had an update handler finish
//     on exactly those values (changes in between may coalesce), and the
//     field handler finished on the watched field's final value;
//   - an update handler never runs for no change of the values the generator
//     writes: not for gopf's own writes, and not for a patch a handler made
//     to its own object;
//   - delete handlers finish exactly once for every deleted object a handler
//     had seen, and never for an object that was not deleted;
//   - resume handlers finish at most once per process for each object that
//     was handled before the process started, and exactly once in the last
//     process for those that were not deleted since; never for an object
//     that was not handled before the process started;
//   - a deleted object keeps none of gopf's finalizers, and the
//     finalizer another writer put on an object is still there;
//   - the operator's writes about an object stay within the budget of
//     reconcile/doc.go: WritesPerCall per handler call, one for a
//     handler's own patch, the finalizer's addition and removal, and one
//     more for each write refused, each response lost and each change by
//     another writer;
//   - the object's daemon: never two runs of it at once, in one process
//     or two (a killed process's daemon ends at the kill); while a process
//     runs and the object lives and is not deleted, a daemon of that
//     process runs, started within DaemonBound of the process's start, the
//     object's creation and each handler call on it; once the object's
//     deletion began no daemon starts for it, and every run has ended
//     before gopf released the object (its last write: the finalizer's
//     removal); and a daemon that was not killed returned when asked to
//     stop, for the right reason (the object deleted, or the operator
//     exiting), before its process stopped;
//   - the object's timer (where the history's TimerInterval says the
//     operator has one): never two runs of it at once, in one process or
//     two (a run killed with its process ends at the kill); while a
//     process runs (until it is asked to stop) and the object is not
//     deleted, a run begins within TimerBound of the process's start, the
//     object's creation and each handler call on it, and within the
//     interval and TimerSlack of the end of each run; once the object's
//     deletion began, no run begins in a process started after it, nor
//     later than TimerSlack after its first delete handler call ended, and
//     every run has ended before gopf releases the object and none begins
//     after (as in Kopf, whose finalizer waits for the timer's task); and
//     a run that was not killed ended before its process exited.
//
// A handler that finished may run again when the write of its outcome did
// not land: Kopf's promise is at least once then, and so is gopf's. A
// repeat is excused when a write about the object was refused between the
// two calls, except an update handler that sees no change after a create
// handler: that is a patch dropped while its outcome was kept. A write
// whose response was lost landed: it excuses nothing.
//
// A SIGKILL cuts the calls whose outcome had not landed: a call running
// when the process was killed, or one that had returned and no write of
// the object's stored state (EventLanded, EventLost) landed between its
// return and the kill. Such a call may run again in the next process, as
// Kopf's at-least-once allows (Cuts counts them); a call whose outcome
// landed before the kill is held to exactly once like any other.
func Check(h History) []Violation {
	events := slices.Clone(h.Events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
	var out []Violation
	for _, name := range objectNames(h) {
		o := objectHistory{name: name, final: h.Final[name], h: h}
		for i, e := range events {
			if e.Object == name {
				o.events = append(o.events, i)
			}
		}
		o.all = events
		out = append(out, o.check()...)
	}
	return out
}

// objectNames lists the objects of a history, sorted.
func objectNames(h History) []string {
	seen := map[string]bool{}
	for _, e := range h.Events {
		if e.Object != "" {
			seen[e.Object] = true
		}
	}
	for name := range h.Final {
		seen[name] = true
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// objectHistory is one object's share of a history.
type objectHistory struct {
	name   string
	final  Final
	h      History
	all    []Event // every event, in time order
	events []int   // indices into all of this object's events
}

// check returns the object's violations of the contract, rule by rule.
func (o objectHistory) check() []Violation {
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete }) >= 0
	calls := len(o.filter(func(e Event) bool { return e.Kind == EventCall }))
	creates := o.finished(HandlerCreate)
	alive := !deleted && o.final.Exists
	var out []Violation
	out = append(out, o.checkCreate(creates, alive)...)
	out = append(out, o.checkUpdates(creates, alive)...)
	out = append(out, o.checkDelete(deleted, calls)...)
	out = append(out, o.checkResume()...)
	out = append(out, o.checkFinalizers(deleted)...)
	out = append(out, o.checkDaemons()...)
	out = append(out, o.checkTimers()...)
	if budget := o.budget(calls); o.final.Writes > budget {
		out = append(out, o.violation(RuleWrites, "the operator wrote %d times about the object, over the budget of %d (%d handler calls)", o.final.Writes, budget, calls))
	}
	return out
}

// checkCreate checks that the create handler finished once per lifetime
// (creates are the events where it finished), and at all if the object
// lived to the end. A call after one that finished must be excused by
// what happened since the last that finished.
func (o objectHistory) checkCreate(creates []int, alive bool) []Violation {
	var out []Violation
	last := -1
	for _, i := range o.filter(func(e Event) bool { return e.Kind == EventCall && e.Handler == HandlerCreate }) {
		if last >= 0 && !o.excusedBetween(last, i) {
			out = append(out, o.violation(RuleCreateOnce,
				"the create handler ran again after it had finished (event %d, finished at event %d) with no refused write or kill that cut its outcome in between", i, last))
			break
		}
		if o.all[i].Outcome.finished() {
			last = i
		}
	}
	if alive && len(creates) == 0 {
		out = append(out, o.violation(RuleCreateDone, "the object lived to the end and no create handler finished for it"))
	}
	return out
}

// checkUpdates checks that every change reaches the update handlers, and
// none that is not a change.
func (o objectHistory) checkUpdates(creates []int, alive bool) []Violation {
	var out []Violation
	if alive && len(creates) > 0 {
		// A create that ran again because its outcome's write was refused
		// covers the object as its last run saw it.
		seen := o.all[creates[0]].Versions
		if last := creates[len(creates)-1]; o.excusedBetween(creates[0], last) {
			seen = o.all[last].Versions
		}
		want := o.final.Versions
		if seen != want && !o.anyFinished(HandlerUpdate, func(v Versions) bool { return v == want }) {
			out = append(out, o.violation(RuleUpdateLost, "the object ended at %s, its create handler saw %s, and no update handler finished on %s", want, seen, want))
		}
		if !o.anyFinished(HandlerField, func(v Versions) bool { return v.Watched == want.Watched }) {
			out = append(out, o.violation(RuleUpdateLost, "the watched field ended at %q and no field handler finished on it", want.Watched))
		}
	}
	changes := o.filter(func(e Event) bool {
		return e.Kind == EventCall && (e.Handler == HandlerCreate || e.Handler == HandlerUpdate) && e.Outcome.finished()
	})
	for k := 1; k < len(changes); k++ {
		prev, cur := o.all[changes[k-1]], o.all[changes[k]]
		if cur.Handler != HandlerUpdate || cur.Versions != prev.Versions {
			continue
		}
		if prev.Handler == HandlerUpdate && o.excusedBetween(changes[k-1], changes[k]) {
			continue
		}
		out = append(out, o.violation(RuleUpdateSpurious,
			"the update handler finished on %s (event %d), what the %s handler had already finished on (event %d)", cur.Versions, changes[k], prev.Handler, changes[k-1]))
	}
	fields := o.finished(HandlerField)
	for k := 1; k < len(fields); k++ {
		prev, cur := o.all[fields[k-1]], o.all[fields[k]]
		if cur.Versions.Watched == prev.Versions.Watched && !o.excusedBetween(fields[k-1], fields[k]) {
			out = append(out, o.violation(RuleUpdateSpurious, "the field handler finished twice on %q (events %d and %d)", cur.Versions.Watched, fields[k-1], fields[k]))
		}
	}
	return out
}

// checkDelete checks that the delete handler finished once, for a deleted
// object that handlers had seen (calls handler calls in all), and never
// ran for an object that was not deleted.
func (o objectHistory) checkDelete(deleted bool, calls int) []Violation {
	deletes := o.finished(HandlerDelete)
	switch {
	case !deleted && len(o.filter(func(e Event) bool { return e.Kind == EventCall && e.Handler == HandlerDelete })) > 0:
		return []Violation{o.violation(RuleDeleteOnce, "a delete handler ran for an object that was not deleted")}
	case deleted && len(deletes) == 0 && calls > 0:
		return []Violation{o.violation(RuleDeleteOnce, "the object was deleted after handlers had seen it, and no delete handler finished")}
	}
	for k := 1; k < len(deletes); k++ {
		if !o.excusedBetween(deletes[k-1], deletes[k]) {
			return []Violation{o.violation(RuleDeleteOnce, "the delete handler finished %d times (events %v) with no refused write or kill that cut its outcome in between", len(deletes), deletes)}
		}
	}
	return nil
}

// checkFinalizers checks that a deleted object keeps none of gopf's
// finalizers, and that another writer's finalizer stays.
func (o objectHistory) checkFinalizers(deleted bool) []Violation {
	var out []Violation
	if deleted {
		left := slices.DeleteFunc(slices.Clone(o.final.Finalizers), func(f string) bool { return !slices.Contains(o.h.Finalizers, f) })
		switch {
		case o.h.Terminating && len(left) > 0:
			out = append(out, o.violation(RuleFinalizer, "the object was deleted and still has gopf's finalizers %v", left))
		case !o.h.Terminating && o.final.Exists:
			out = append(out, o.violation(RuleFinalizer, "the object was deleted and is still there, with finalizers %v", o.final.Finalizers))
		}
	}
	if o.final.Exists && o.final.ForeignFinalizer && !slices.Contains(o.final.Finalizers, ForeignFinalizer) {
		out = append(out, o.violation(RuleForeign, "another writer's finalizer %s is gone (finalizers: %v)", ForeignFinalizer, o.final.Finalizers))
	}
	return out
}

// violation is a violation of rule by the object, its message formatted.
func (o objectHistory) violation(rule, format string, args ...any) Violation {
	return Violation{Rule: rule, Object: o.name, Message: fmt.Sprintf(format, args...)}
}

// finished returns the indices of the events where handler finished.
func (o objectHistory) finished(handler string) []int {
	return o.filter(func(e Event) bool {
		return e.Kind == EventCall && e.Handler == handler && e.Outcome.finished()
	})
}

func (o objectHistory) checkResume() []Violation {
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, Violation{Rule: RuleResumeOnce, Object: o.name, Message: fmt.Sprintf(format, args...)})
	}
	var starts []int
	for i, e := range o.all {
		if e.Kind == EventStart {
			starts = append(starts, i)
		}
	}
	for n, s := range starts {
		p := o.all[s].Process
		handled, sure := o.handledBefore(s)
		resumes := o.filter(func(e Event) bool {
			return e.Kind == EventCall && e.Handler == HandlerResume && e.Process == p && e.Outcome.finished()
		})
		deletedSince := false
		for _, i := range o.events {
			if i > s && o.all[i].Kind == EventDelete {
				deletedSince = true
			}
		}
		last := n == len(starts)-1
		switch {
		case !handled && len(resumes) > 0:
			add("process %d resumed an object that was not handled before it started (event %d)", p, resumes[0])
		case len(resumes) > 1 && !o.excusedBetween(resumes[0], resumes[1]):
			add("process %d finished the resume handler %d times (events %v)", p, len(resumes), resumes)
		case sure && last && !deletedSince && o.final.Exists && len(resumes) == 0:
			add("the object was handled before process %d started, and that process never resumed it", p)
		}
	}
	return out
}

// handledBefore reports whether the object's create was complete before
// event s (its create handler finished, and so did every other handler
// that was called for the create) and it was not deleted before s; and
// whether that is sure: no write about it was refused since the create
// completed (the outcome may not have landed, and the object may get a
// create again instead). Kopf resumes only objects whose create is
// complete; an unfinished create goes on instead.
func (o objectHistory) handledBefore(s int) (handled, sure bool) {
	created, complete := -1, -1
	last := map[string]Event{} // each handler's last call for the create
	for _, i := range o.events {
		if i >= s {
			break
		}
		e := o.all[i]
		switch {
		case e.Kind == EventDelete:
			return false, false
		case e.Kind == EventCall && e.Reason == string(handlers.ReasonCreate):
			last[e.Handler] = e
			if e.Handler == HandlerCreate && e.Outcome.finished() && created < 0 {
				created = i
			}
			if e.Outcome.finished() {
				complete = i
			}
		}
	}
	for _, e := range last {
		if !e.Outcome.finished() {
			return false, false
		}
	}
	// The field handler runs for the create too (the watched field is set
	// at creation): until it is called, the create is not complete.
	if _, called := last[HandlerField]; !called {
		return false, false
	}
	return created >= 0, created >= 0 && !o.excusedBetween(complete, s)
}

// budget is how many writes about the object the operator may send.
func (o objectHistory) budget(calls int) int {
	n := o.h.WritesPerCall*calls + 2 // the finalizer comes and goes
	for _, i := range o.events {
		e := o.all[i]
		switch {
		case e.Kind == EventRefused, e.Kind == EventConflict, e.Kind == EventLost, e.Kind == EventLostResults:
			n++
		case e.Kind == EventCall && e.Patched:
			n++
		}
	}
	return n
}

// anyFinished reports whether a call of handler finished on values match
// accepts.
func (o objectHistory) anyFinished(handler string, match func(Versions) bool) bool {
	for _, i := range o.events {
		e := o.all[i]
		if e.Kind == EventCall && e.Handler == handler && e.Outcome.finished() && match(e.Versions) {
			return true
		}
	}
	return false
}

// excusedBetween reports whether the call of event i may run again at
// event j: a write about the object was refused in between, or the call
// was cut by a kill (cutBefore).
func (o objectHistory) excusedBetween(i, j int) bool {
	for _, k := range o.events {
		if k > i && k < j && o.all[k].Kind == EventRefused {
			return true
		}
	}
	return o.cutBefore(i, j)
}

// cutBefore reports whether the process of event i was killed before event
// j with no write about the object that carries outcomes landed between i
// and the kill: the outcome of a call at i (finished or not) was lost with
// the process. A write landed after the call returned carries its outcome,
// since the engine writes a reconcile's outcomes in one request after its
// handlers have run; a write whose response was lost landed too.
func (o objectHistory) cutBefore(i, j int) bool {
	p := o.all[i].Process
	for k := i + 1; k < j && k < len(o.all); k++ {
		e := o.all[k]
		switch {
		case e.Object == o.name && (e.Kind == EventLanded || e.Kind == EventLost):
			return false
		case e.Kind == EventKill && e.Process == p:
			return true
		}
	}
	return false
}

// filter returns the indices of the object's events that keep accepts.
func (o objectHistory) filter(keep func(Event) bool) []int {
	var out []int
	for _, i := range o.events {
		if keep(o.all[i]) {
			out = append(out, i)
		}
	}
	return out
}

// index returns the first of the object's events that match accepts, or -1.
func (o objectHistory) index(match func(Event) bool) int {
	if f := o.filter(match); len(f) > 0 {
		return f[0]
	}
	return -1
}

// Cuts counts the handler calls of a history that a kill cut (see Check),
// resume handlers aside (they run once per process anyway): the calls
// killed while they ran, and those that had finished and whose outcome
// did not land before the kill. Repeated are those of them that ran again
// on the same object, in a later process.
func Cuts(h History) (cut, repeated int) {
	events := slices.Clone(h.Events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
	for _, name := range objectNames(h) {
		o := objectHistory{name: name, all: events}
		for i, e := range events {
			if e.Object == name {
				o.events = append(o.events, i)
			}
		}
		for _, i := range o.events {
			e := events[i]
			if e.Kind != EventCall || e.Handler == HandlerResume {
				continue
			}
			if e.Outcome != Killed && !(e.Outcome.finished() && o.cutBefore(i, len(events))) {
				continue
			}
			cut++
			if o.index(func(x Event) bool { return x.Kind == EventCall && x.Handler == e.Handler && x.Process > e.Process }) >= 0 {
				repeated++
			}
		}
	}
	return cut, repeated
}
