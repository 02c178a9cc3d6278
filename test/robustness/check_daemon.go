package robustness

import (
	"slices"
	"time"

	"github.com/gopf-dev/gopf/handlers"
)

// The rules of the daemon contract, as Violation.Rule names them.
const (
	RuleDaemonOnce    = "one daemon at a time"
	RuleDaemonRuns    = "daemon runs while the object lives"
	RuleDaemonDeleted = "daemon stopped on deletion"
	RuleDaemonStop    = "daemon stop says why"
)

// DaemonBound is how long after an operator process started, an object
// was created, or a handler call on the object ended in that process, its
// daemon must be running (RuleDaemonRuns). gopf starts daemons in the
// reconcile that runs the change handlers, once the finalizer is on the
// object, so a daemon starts well within a second; 10 s is generous, for
// the finalizer's writes refused or held (FaultSlow holds each for 1 s)
// and retried with backoff, and for the race detector on two busy cores.
const DaemonBound = 10 * time.Second

// checkDaemons checks the object's daemon runs against the daemon
// contract (see Check).
func (o objectHistory) checkDaemons() []Violation {
	runs := o.runs(EventDaemonStart, EventDaemonStop)
	return slices.Concat(o.checkOnce(RuleDaemonOnce, "daemon", runs), o.checkDaemonRuns(runs), o.checkDaemonDeleted(runs), o.checkDaemonStop(runs))
}

// checkDaemonRuns checks that, in every operator process, the object's
// daemon runs DaemonBound after the process started or the object was
// created, and after each handler call on the object in the process
// ended, while the process runs and the object is not deleted.
func (o objectHistory) checkDaemonRuns(runs []run) []Violation {
	created := o.index(func(e Event) bool { return e.Kind == EventWrite })
	if created < 0 {
		return nil
	}
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete })
	for p, w := range o.processes() {
		until := w[1]
		if deleted >= 0 {
			until = min(until, deleted)
		}
		anchors := append([]int{max(w[0], created)}, o.filter(func(e Event) bool {
			return e.Kind == EventCall && e.Process == p && e.Handler != HandlerDelete && e.Outcome != Killed && e.Outcome != Interrupted
		})...)
		for _, a := range anchors {
			due := o.all[a].At.Add(DaemonBound)
			if a >= until || !due.Before(o.at(until)) || o.runningAt(runs, p, due) {
				continue
			}
			return []Violation{o.violation(RuleDaemonRuns, "process %d ran and the object lived, and no daemon of it ran %s after event %d", p, DaemonBound, a)}
		}
	}
	return nil
}

// processes returns the operator processes of the history: for each, the
// index of its start and that of its end (its graceful stop or kill, or
// len(all)).
func (o objectHistory) processes() map[int][2]int {
	out := map[int][2]int{}
	for i, e := range o.all {
		switch w, ok := out[e.Process]; {
		case e.Kind == EventStart:
			out[e.Process] = [2]int{i, len(o.all)}
		case ok && (e.Kind == EventStop || e.Kind == EventKill) && w[1] == len(o.all):
			out[e.Process] = [2]int{w[0], i}
		}
	}
	return out
}

// at is when event i happened; len(all) is the end of the history
// (History.End, or its last event).
func (o objectHistory) at(i int) time.Time {
	if i >= len(o.all) {
		if !o.h.End.IsZero() {
			return o.h.End
		}
		return o.all[len(o.all)-1].At
	}
	return o.all[i].At
}

// runningAt reports whether a daemon run of process p had started at t
// and had not ended by then, or ended because it was asked to stop (the
// request precedes the events that record its reason).
func (o objectHistory) runningAt(runs []run, p int, t time.Time) bool {
	return slices.ContainsFunc(runs, func(d run) bool {
		return d.process == p && !o.all[d.start].At.After(t) && (o.at(d.end).After(t) || d.detail != "")
	})
}

// checkDaemonDeleted checks that once the object's deletion began, no
// daemon starts for it (after a delete handler call ended, or in a
// process started after the deletion), and that every daemon of it has
// ended before gopf released it: the operator's last write about it.
func (o objectHistory) checkDaemonDeleted(runs []run) []Violation {
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete })
	if deleted < 0 {
		return nil
	}
	handled := o.index(func(e Event) bool { return e.Kind == EventCall && e.Handler == HandlerDelete })
	procs := o.processes()
	for _, d := range runs {
		if handled >= 0 && d.start > handled || procs[d.process][0] > deleted {
			return []Violation{o.violation(RuleDaemonDeleted, "daemon %d started by process %d (event %d) after the object's deletion began (event %d)", d.id, d.process, d.start, deleted)}
		}
	}
	last := o.releaseWrite(deleted)
	if last < 0 {
		return nil
	}
	for _, d := range runs {
		if d.start < last && d.end > last {
			return []Violation{o.violation(RuleDaemonDeleted, "daemon %d of process %d (events %d to %d) still ran when the object was released (event %d)", d.id, d.process, d.start, d.end, last)}
		}
	}
	return nil
}

// released reports whether the object was let go at the end: it is gone,
// or, for kinds whose objects stay terminating, it has none of gopf's
// finalizers.
func (o objectHistory) released() bool {
	if !o.final.Exists {
		return true
	}
	return o.h.Terminating && !slices.ContainsFunc(o.final.Finalizers, func(f string) bool { return slices.Contains(o.h.Finalizers, f) })
}

// checkDaemonStop checks that every daemon run that did not end with its
// process's kill returned with a reason, the right one: the object's
// deletion, or its process's graceful stop.
func (o objectHistory) checkDaemonStop(runs []run) []Violation {
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete }) >= 0
	for _, d := range runs {
		var why string
		switch {
		case d.end >= len(o.all) || o.all[d.end].Kind == EventKill:
			continue
		case !d.ended:
			why = "still ran when its process stopped gracefully"
		case d.detail == string(handlers.StopDeleted) && !deleted:
			why = "was stopped as deleted, and the object was not deleted"
		case d.detail == string(handlers.StopOperatorExiting) && !o.stoppedAfter(d):
			why = "was stopped as the operator exiting, and its process did not stop gracefully"
		case d.detail != string(handlers.StopDeleted) && d.detail != string(handlers.StopOperatorExiting):
			why = "returned with the stop reason " + `"` + d.detail + `"`
		default:
			continue
		}
		return []Violation{o.violation(RuleDaemonStop, "daemon %d of process %d (event %d) %s", d.id, d.process, d.start, why)}
	}
	return nil
}

// stoppedAfter reports whether the process of d stopped gracefully after d
// ended.
func (o objectHistory) stoppedAfter(d run) bool {
	for _, e := range o.all[d.end:] {
		if e.Process == d.process && (e.Kind == EventStop || e.Kind == EventKill) {
			return e.Kind == EventStop
		}
	}
	return false
}
