package robustness

import (
	"fmt"
	"time"

	"github.com/gopf-dev/gopf/handlers"
)

// HandlerDaemon is the id of the suite's daemon.
const HandlerDaemon = "daemon"

// daemonTick is how often the suite's daemon reports that it still runs:
// each report is an iteration, and a moment a kill can cut
// (MomentInDaemon).
const daemonTick = 200 * time.Millisecond

// DaemonPhase is what a daemon reports: that it started, that it is in an
// iteration, or that it returned.
type DaemonPhase string

// The phases of a daemon's reports.
const (
	DaemonStarted DaemonPhase = "started"
	DaemonTick    DaemonPhase = "tick"
	DaemonStopped DaemonPhase = "stopped"
)

// daemonReport is a report of a daemon of process Process on an object:
// ID is the daemon run's id the run gave at its start (0 in the start's
// own report); Reason is the stop reason of DaemonStopped.
type daemonReport struct {
	Process int
	Object  string
	UID     string
	ID      int
	Phase   DaemonPhase
	Reason  string
}

// daemonReply gives a daemon that started its id.
type daemonReply struct{ ID int }

// daemonLife is what the suite's daemon uses of handlers.Daemon: its
// sleep, cut short by a stop, and the stop's reason.
type daemonLife interface {
	Sleep(time.Duration) bool
	StopReason() handlers.StopReason
}

// daemonFunc is the daemon behind every class's OnDaemon.
type daemonFunc func(c *handlers.Cause, life daemonLife) error

// runDaemon is the suite's daemon: it reports its start, an iteration
// every daemonTick until it is asked to stop, and its stop with the
// reason. A start that cannot be reported is retried as a temporary
// error; iterations whose report fails go on (the run decides nothing by
// them but kills); a stop that cannot be reported shows as a daemon that
// never stopped.
func runDaemon(c *handlers.Cause, life daemonLife, process int, report func(daemonReport) (daemonReply, error)) error {
	d := daemonReport{Process: process, Object: c.Name, UID: string(c.UID), Phase: DaemonStarted}
	rep, err := report(d)
	if err != nil {
		return handlers.Temporary(err, retryDelay)
	}
	d.ID = rep.ID
	for life.Sleep(daemonTick) {
		d.Phase = DaemonTick
		_, _ = report(d) // see above
	}
	d.Phase, d.Reason = DaemonStopped, string(life.StopReason())
	_, err = report(d)
	return err
}

// daemon records a daemon's report, and answers it. A report of a process
// already killed is not recorded (ok is false). An iteration of a daemon
// armed to have its process killed (MomentInDaemon) kills it before the
// answer: the daemon is mid-iteration.
func (r *runner) daemon(d daemonReport) (rep daemonReply, ok bool) {
	r.mu.Lock()
	if r.gone[d.Process] {
		r.mu.Unlock()
		return daemonReply{}, false
	}
	e := Event{Object: d.Object, UID: d.UID, Process: d.Process, Run: d.ID, Handler: HandlerDaemon}
	switch d.Phase {
	case DaemonStarted:
		r.daemonID++
		rep.ID, e.Run, e.Kind = r.daemonID, r.daemonID, EventDaemonStart
		r.recordLocked(e)
	case DaemonStopped:
		e.Kind, e.Detail = EventDaemonStop, d.Reason
		r.recordLocked(e)
	case DaemonTick:
		r.ticks++
		key := d.Object + "/" + HandlerDaemon
		if a := r.arms[key]; a != nil && a.behaviour == BehaveKill {
			delete(r.arms, key)
			r.mu.Unlock()
			r.kill(d.Process, fmt.Sprintf("%s %s", MomentInDaemon, d.Object))
			return daemonReply{}, false
		}
	}
	r.mu.Unlock()
	return rep, true
}
