package robustness

import (
	"slices"
	"time"
)

// The rules of the timer contract, as Violation.Rule names them.
const (
	RuleTimerOnce    = "one timer run at a time"
	RuleTimerRuns    = "timer runs while the object lives"
	RuleTimerDeleted = "timer stopped on deletion"
	RuleTimerStop    = "timer run ends before its process exits"
)

// Bounds of the timer contract.
const (
	// TimerBound is how long after an operator process started, an object
	// was created, or a handler call on the object ended in that process,
	// a run of its timer must have begun (RuleTimerRuns). gopf starts an
	// object's timers in the reconcile that runs its change handlers, once
	// the finalizer is on it, and a timer without an initial delay runs at
	// once; 10 s is generous, as DaemonBound is, for the finalizer's
	// writes refused or held and retried with backoff.
	TimerBound = 10 * time.Second
	// TimerSlack is how much later than an interval after a run ended the
	// next run of the timer may begin, and how long after the object's
	// first delete handler call ended a run may still begin: the queue and
	// a worker take a due run at once, and gopf stops an object's timers in
	// the reconcile that calls its delete handlers, right after them; but
	// operator processes niced on two busy cores with the race detector on
	// were seen to take 250 ms between the two.
	TimerSlack = 3 * time.Second
)

// checkTimers checks the object's timer runs against the timer contract
// (see Check).
func (o objectHistory) checkTimers() []Violation {
	runs := o.runs(EventTimerStart, EventTimerEnd)
	return slices.Concat(o.checkOnce(RuleTimerOnce, "timer run", runs), o.checkTimerRuns(runs), o.checkTimerDeleted(runs), o.checkTimerStop(runs))
}

// checkTimerRuns checks that, in every operator process, while it runs
// (until it is asked to stop) and the object is not deleted, the object's
// timer runs: a run begins within TimerBound of the process's start, the
// object's creation and each handler call on it that ended in the process,
// and within the interval and TimerSlack of the end of each run.
func (o objectHistory) checkTimerRuns(runs []run) []Violation {
	interval := o.h.TimerInterval
	created := o.index(func(e Event) bool { return e.Kind == EventWrite })
	if interval <= 0 || created < 0 {
		return nil
	}
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete })
	for p, w := range o.processes() {
		until := o.stopping(p, w)
		if deleted >= 0 {
			until = min(until, deleted)
		}
		anchors := append([]int{max(w[0], created)}, o.filter(func(e Event) bool {
			return e.Kind == EventCall && e.Process == p && e.Handler != HandlerDelete && e.Outcome != Killed && e.Outcome != Interrupted
		})...)
		for _, a := range anchors {
			due := o.all[a].At.Add(TimerBound)
			if a >= until || !due.Before(o.at(until)) || o.ranBetween(runs, p, a, due) {
				continue
			}
			return []Violation{o.violation(RuleTimerRuns, "process %d ran and the object lived, and no run of its timer began within %s of event %d", p, TimerBound, a)}
		}
		for _, r := range runs {
			if r.process != p || !r.ended || r.end >= until {
				continue
			}
			due := o.all[r.end].At.Add(interval + TimerSlack)
			if due.Before(o.at(until)) && !o.ranBetween(runs, p, r.end, due) {
				return []Violation{o.violation(RuleTimerRuns, "process %d ran and the object lived, and no run of its timer began within %s of the end of run %d (event %d)",
					p, interval+TimerSlack, r.id, r.end)}
			}
		}
	}
	return nil
}

// stopping returns when process p, which ran from w[0] to w[1], was asked
// to stop gracefully (its EventStopping), or w[1] if it was not.
func (o objectHistory) stopping(p int, w [2]int) int {
	for k := w[0] + 1; k < w[1] && k < len(o.all); k++ {
		if e := o.all[k]; e.Kind == EventStopping && e.Process == p {
			return k
		}
	}
	return w[1]
}

// ranBetween reports whether a timer run of process p was under way
// between event a and time due: it began by due and had not ended by a.
func (o objectHistory) ranBetween(runs []run, p, a int, due time.Time) bool {
	return slices.ContainsFunc(runs, func(r run) bool {
		return r.process == p && r.end > a && !o.all[r.start].At.After(due)
	})
}

// checkTimerDeleted checks that once the object's deletion began, no run
// of its timer begins in a process started after that, nor later than
// TimerSlack after its first delete handler call ended; and that every
// run has ended before gopf released the object (the operator's last write
// about it: the finalizer's removal), which gopf's finalizer is there for,
// and none begins after.
func (o objectHistory) checkTimerDeleted(runs []run) []Violation {
	deleted := o.index(func(e Event) bool { return e.Kind == EventDelete })
	if deleted < 0 {
		return nil
	}
	handled := o.index(func(e Event) bool { return e.Kind == EventCall && e.Handler == HandlerDelete })
	procs := o.processes()
	for _, r := range runs {
		late := handled >= 0 && o.all[r.start].At.After(o.all[handled].At.Add(TimerSlack))
		if late || procs[r.process][0] > deleted {
			return []Violation{o.violation(RuleTimerDeleted, "timer run %d began in process %d (event %d) after the object's deletion began (event %d) and its delete handler ran (event %d)",
				r.id, r.process, r.start, deleted, handled)}
		}
	}
	last := o.releaseWrite(deleted)
	if last < 0 {
		return nil
	}
	for _, r := range runs {
		switch {
		case r.start > last:
			return []Violation{o.violation(RuleTimerDeleted, "timer run %d began in process %d (event %d) after the object was released (event %d)", r.id, r.process, r.start, last)}
		case r.end > last:
			return []Violation{o.violation(RuleTimerDeleted, "timer run %d of process %d (events %d to %d) was under way when the object was released (event %d)", r.id, r.process, r.start, r.end, last)}
		}
	}
	return nil
}

// checkTimerStop checks that every timer run that was not killed with its
// process ended before the process exited: a graceful stop waits for the
// runs under way.
func (o objectHistory) checkTimerStop(runs []run) []Violation {
	for _, r := range runs {
		if r.end < len(o.all) && o.all[r.end].Kind == EventStop {
			return []Violation{o.violation(RuleTimerStop, "timer run %d of process %d (event %d) was still under way when its process stopped gracefully (event %d)", r.id, r.process, r.start, r.end)}
		}
	}
	return nil
}
