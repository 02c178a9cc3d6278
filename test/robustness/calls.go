package robustness

import (
	"fmt"
	"slices"
	"time"
)

// openCall is a handler call that began and has not ended.
type openCall struct {
	event Event // its EventCall, with no outcome yet
	arm   arm   // how it was armed
}

// begin records that a handler call begins (its side effect: from here on
// it happened) and answers how it behaves. A call armed with BehaveKill
// has its process killed: before it is recorded (MomentBeforeHandler),
// right after (MomentInHandler), or Delay after it ends
// (MomentAfterHandler). ok is false for a call of a process already
// killed, which is not recorded.
func (r *runner) begin(c callReport) (rep callReply, ok bool) {
	a := r.takeArm(c.Object, c.Handler)
	r.mu.Lock()
	if r.gone[c.Process] {
		r.mu.Unlock()
		return callReply{}, false
	}
	r.callID++
	rep = callReply{ID: r.callID, Behaviour: a.behaviour}
	switch a.behaviour {
	case BehavePatch:
		r.patches++
		rep.Label = fmt.Sprintf("p%d", r.patches)
	case BehaveBlock:
		select {
		case r.entered <- struct{}{}:
		default:
		}
	case BehaveKill:
		rep.Behaviour = "" // the process is killed; the handler does nothing special
	}
	if a.behaviour != BehaveKill || a.moment != MomentBeforeHandler {
		r.calls[rep.ID] = &openCall{arm: a, event: Event{Kind: EventCall, Object: c.Object, UID: c.UID, Process: c.Process,
			Versions: c.Versions, Handler: c.Handler, Reason: c.Reason, Detail: c.Diff}}
	}
	r.mu.Unlock()
	if a.behaviour == BehaveKill && a.moment != MomentAfterHandler {
		r.kill(c.Process, fmt.Sprintf("%s %s", a.moment, c.Handler))
	}
	return rep, true
}

// end records how call id ended; a call its process's kill cut is
// recorded already, as killed. A call armed to be killed after it returns
// has its process killed after the arm's delay. A second report of a call
// that ended can only say it was interrupted after all (see interrupted).
func (r *runner) end(id int, outcome Outcome, patched bool) {
	r.mu.Lock()
	if i, ok := r.ended[id]; ok && outcome == Interrupted {
		r.events[i].Outcome, r.events[i].Patched = Interrupted, false
		r.mu.Unlock()
		return
	}
	c := r.calls[id]
	if c == nil {
		r.mu.Unlock()
		return
	}
	delete(r.calls, id)
	c.event.Outcome, c.event.Patched = outcome, patched
	r.recordLocked(c.event)
	r.ended[id] = len(r.events) - 1
	r.mu.Unlock()
	if c.arm.behaviour == BehaveKill && c.arm.moment == MomentAfterHandler {
		r.late.Add(1)
		time.AfterFunc(c.arm.delay, func() {
			defer r.late.Done()
			r.kill(c.event.Process, fmt.Sprintf("%s %s +%s", MomentAfterHandler, c.event.Handler, c.arm.delay))
		})
	}
}

// kill kills operator process p with SIGKILL, if it still runs, and
// records it: the calls it was running end there, killed, and then the
// kill. It wakes awaitKill.
func (r *runner) kill(p int, moment string) {
	r.mu.Lock()
	c := r.children[p]
	r.mu.Unlock()
	if c == nil || !c.Kill() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[p] = true
	var ids []int
	for id, oc := range r.calls {
		if oc.event.Process == p {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := r.calls[id].event
		e.Outcome = Killed
		r.recordLocked(e)
		delete(r.calls, id)
	}
	r.recordLocked(Event{Kind: EventKill, Process: p, Detail: moment})
	select {
	case r.killed <- struct{}{}:
	default:
	}
}

// awaitKill carries out OpKill on the running process: after op.Delay
// for MomentAnytime, once a response was lost (or after blockTimeout) for
// MomentAfterLostResponse, else once the armed handler had its process
// killed.
// An armed handler that is not called within blockTimeout (its change went
// to another handler's retry) is disarmed, and the process killed then.
func (r *runner) awaitKill(op Op) {
	r.mu.Lock()
	p := r.process
	r.mu.Unlock()
	if op.Moment == MomentAfterLostResponse {
		r.awaitLost()
		r.kill(p, string(MomentAfterLostResponse))
		return
	}
	if op.Moment == MomentAnytime {
		select {
		case <-r.t.Ctx.Done():
		case <-time.After(op.Delay):
			r.kill(p, fmt.Sprintf("%s +%s", MomentAnytime, op.Delay))
		}
		return
	}
	deadline := time.After(blockTimeout)
	for !r.isGone(p) {
		select {
		case <-r.t.Ctx.Done():
			return
		case <-r.killed: // some kill: look again
		case <-deadline:
			r.disarmKills()
			r.kill(p, fmt.Sprintf("%s +%s, as the armed handler was not called", MomentAnytime, blockTimeout))
			return
		}
	}
}

// isGone reports whether process p was killed.
func (r *runner) isGone(p int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[p]
}

// disarmKills removes the arms that would kill a process.
func (r *runner) disarmKills() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, a := range r.arms {
		if a.behaviour == BehaveKill {
			delete(r.arms, k)
		}
	}
}
