package robustness

import (
	"fmt"
	"time"

	"github.com/gopf-dev/gopf/handlers"
)

// HandlerTimer is the id of the suite's timer.
const HandlerTimer = "timer"

// TimerInterval is the interval of the suite's timer: short, so that every
// object's timer runs many times within a sequence.
const TimerInterval = 400 * time.Millisecond

// TimerPhase is what a timer run reports: that it began, or that it is
// about to return.
type TimerPhase string

// The phases of a timer run's reports.
const (
	TimerStarted TimerPhase = "started"
	TimerEnded   TimerPhase = "ended"
)

// timerReport is a report of a timer run of process Process on an object:
// ID is the run's id the run got at its start (0 in the start's own
// report).
type timerReport struct {
	Process int
	Object  string
	UID     string
	ID      int
	Phase   TimerPhase
}

// timerReply gives a timer run that began its id.
type timerReply struct{ ID int }

// timerFunc is the timer behind every class's OnTimer.
type timerFunc func(c *handlers.Cause) error

// runTimer is one run of the suite's timer: it reports its start (its side
// effect: from the answer on, it happened) and its end, and returns no
// result, so that its runs cost no write. A start that cannot be reported
// is retried as a temporary error; an end that cannot be reported shows
// as a run that never ended (only a killed process fails to report).
func runTimer(c *handlers.Cause, process int, report func(timerReport) (timerReply, error)) error {
	d := timerReport{Process: process, Object: c.Name, UID: string(c.UID), Phase: TimerStarted}
	rep, err := report(d)
	if err != nil {
		return handlers.Temporary(err, retryDelay)
	}
	d.ID, d.Phase = rep.ID, TimerEnded
	_, err = report(d)
	return err
}

// timer records a timer run's report, and answers it. A report of a
// process already killed is not recorded (ok is false). The start of a run
// armed to have its process killed (MomentInTimer) is recorded, and the
// process killed before the answer: the run is cut while it waits for it.
func (r *runner) timer(d timerReport) (rep timerReply, ok bool) {
	r.mu.Lock()
	if r.gone[d.Process] {
		r.mu.Unlock()
		return timerReply{}, false
	}
	e := Event{Object: d.Object, UID: d.UID, Process: d.Process, Run: d.ID, Handler: HandlerTimer, Kind: EventTimerEnd}
	if d.Phase == TimerStarted {
		r.timerID++
		rep.ID, e.Run, e.Kind = r.timerID, r.timerID, EventTimerStart
	}
	r.recordLocked(e)
	key := d.Object + "/" + HandlerTimer
	if a := r.arms[key]; d.Phase == TimerStarted && a != nil && a.behaviour == BehaveKill {
		delete(r.arms, key)
		r.mu.Unlock()
		r.kill(d.Process, fmt.Sprintf("%s %s", MomentInTimer, d.Object))
		return timerReply{}, false
	}
	r.mu.Unlock()
	return rep, true
}
