package spawn

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/policy"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// worker runs due timers until the queue shuts down.
func (s *Spawner) worker() {
	defer s.wg.Done()
	for t := range s.queue.work {
		s.runTimer(t)
		s.queue.done(t)
	}
}

// runTimer runs one due timer (unless it is gone, or its object is not idle
// long enough yet) and schedules its next run.
func (s *Spawner) runTimer(t *timerState) {
	s.k.AddBusy(1) // before the gate check, so that a pause can wait for it
	defer s.k.AddBusy(-1)
	ctx, run := s.beginTimerRun(t)
	if run == nil {
		return
	}
	err := s.callTimer(ctx, run)
	end := time.Now()
	opts := run.t.reg.Options
	v := policy.Judge(opts, s.opts.DefaultBackoff, err, run.attempts+1, run.started, end)
	metrics.HandlerCalls.WithLabelValues(s.opts.Name, opts.ID, v.Outcome.String()).Inc()
	failed, stopped := s.endTimerRun(run, v, end)
	if failed {
		run.c.Log.Error(v.Err, "timer failed permanently; it stops for this object")
		s.k.FailedForGood(run.obj, opts.ID, v.Err)
	}
	if failed || stopped {
		s.wakeUp(run.obj)
	}
}

// timerRun is one run of a timer, as its worker sees it between taking the
// timer from the queue and recording the outcome.
type timerRun struct {
	o         *spawned
	t         *timerState
	obj       client.Object // a private copy of the object, read from the cache
	changedAt time.Time     // the object's last change when the run began
	attempts  int           // failed attempts before this one
	started   time.Time     // first attempt of the run
	c         *handlers.Cause
	last      *writtenResult // the timer's last write before the run, if any
	wrote     *writtenResult // this run's write of its result, if any
	unsent    *unsentPatch   // the patch an earlier attempt of the run could not send; then, the one this attempt could not
}

// unsentPatch is a timer's patch that could not be sent, with the result
// it writes, if any. The next attempt of the run sends it again instead of
// calling the function again: the function ran, and its side effects with
// it; only its outcome is missing.
type unsentPatch struct {
	patch *spec.Patch
	wrote *writtenResult
}

// writtenResult is a timer's result as a write of the timer left it in
// status, with the object's resourceVersion after that write. An object
// copy of an older version does not show it yet: the cache lags behind the
// timer's own writes, the more so when the API server is busy.
type writtenResult struct {
	value   any
	version string
}

// beginTimerRun prepares a run of the timer of key, with the context to run
// it in; it returns a nil run when the timer is not to run now: it is gone,
// the spawner stops, the operator is paused, or the object has not been
// quiet long enough. A timer whose object the cache does not hold (or
// holds in another version than the one synced, deleted and created again)
// tries again after the default backoff, unless the reconcile that follows
// stops it first.
func (s *Spawner) beginTimerRun(t *timerState) (context.Context, *timerRun) {
	uid, ok := s.timerWanted(t)
	if !ok {
		return nil, nil
	}
	// Read without the lock: the reconciles and the other workers need it
	// meanwhile.
	obj := s.read(t.key.obj, uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[t.key.obj]
	if o == nil || o.uid != uid || o.timer(t.key.id) != t {
		return nil, nil // stopped meanwhile
	}
	if obj == nil {
		s.schedule(t, s.opts.DefaultBackoff)
		return nil, nil
	}
	now := time.Now()
	if !t.due.IsZero() {
		metrics.TimerLateness.WithLabelValues(s.opts.Name, t.reg.Options.ID).Observe(now.Sub(t.due).Seconds())
		t.due = time.Time{}
	}
	if t.attempts == 0 {
		t.started = now
	}
	if t.first.IsZero() {
		t.first = now
	}
	// A private copy: the write after the call decodes the response into it.
	run := &timerRun{o: o, t: t, obj: obj, changedAt: o.changedAt,
		attempts: t.attempts, started: t.started, last: t.written, unsent: t.unsent}
	run.c = s.newCall(t.reg, run.obj, t.attempts, t.started)
	run.c.Patch = &handlers.Patch{}
	o.running++
	return s.ctx, run
}

// timerWanted reports whether timer t is to run now, and the UID of its
// object: the timer is still there, the spawner runs, the operator is not
// paused, and the object has been quiet long enough.
func (s *Spawner) timerWanted(t *timerState) (types.UID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[t.key.obj]
	if o == nil || s.ctx == nil || s.ctx.Err() != nil || !s.k.Open() {
		return "", false
	}
	if o.timer(t.key.id) != t || !s.idleLongEnoughLocked(o, t, time.Now()) {
		return "", false
	}
	return o.uid, true
}

// idleLongEnoughLocked reports whether a timer with an idle time may run:
// its object has not changed for that long, and an idle-only timer (one
// without an interval) has not run yet in this quiet period; the next
// change queues it again. A timer queued too early goes back into the queue
// for when the object will have been quiet long enough.
func (s *Spawner) idleLongEnoughLocked(o *spawned, t *timerState, now time.Time) bool {
	opts := t.reg.Options
	if opts.Idle <= 0 {
		return true
	}
	if quiet := now.Sub(o.changedAt); quiet < opts.Idle {
		s.queue.add(t, now.Add(opts.Idle-quiet))
		return false
	}
	return opts.Interval > 0 || !t.ranFor.Equal(o.changedAt)
}

// callTimer calls the timer's function and sends its patch, with what the
// function returned stored in status under the timer's id when that
// changes it; or, when an earlier attempt of the run could not send its
// patch, sends that one again without calling the function. A patch that
// cannot be sent is a temporary error, and is kept for the next attempt.
func (s *Spawner) callTimer(ctx context.Context, run *timerRun) error {
	out := run.unsent
	if out == nil {
		var err error
		if out, err = s.callTimerFunc(ctx, run); err != nil {
			return err
		}
	}
	if werr := s.k.SendPatch(ctx, run.obj, out.patch); werr != nil {
		run.unsent = out
		return handlers.Temporary(werr, 0)
	}
	run.unsent = nil
	if out.wrote != nil {
		run.wrote = &writtenResult{value: out.wrote.value, version: run.obj.GetResourceVersion()} // the response's
	}
	return nil
}

// callTimerFunc calls the timer's function and returns the patch to send:
// the function's own, with its result when that changes what status holds.
func (s *Spawner) callTimerFunc(ctx context.Context, run *timerRun) (*unsentPatch, error) {
	reg := run.t.reg
	version := run.obj.GetResourceVersion() // before the call: the handler may touch its object
	result, err := s.k.Call(ctx, reg, run.obj, run.c)
	if err != nil {
		return nil, err
	}
	out := &unsentPatch{patch: (*spec.Patch)(run.c.Patch)}
	if result != nil {
		status, _ := state.StatusOf(run.obj)
		stored := newestResult(status[reg.Options.ID], version, run.last)
		if state.Changes(stored, result) {
			spec.MergeStatus(out.patch, reg.Options.ID, result)
			out.wrote = &writtenResult{value: afterMerge(stored, result)}
		}
	}
	return out, nil
}

// newestResult is the timer's result as stored now, as far as gopf knows:
// the object copy's (stored, at version), unless the timer's own last
// write is newer than that copy. Versions that cannot be compared leave
// the copy's: at worst an unchanged result is written again, but a
// changed one is never taken for written.
func newestResult(stored any, version string, last *writtenResult) any {
	if last == nil {
		return stored
	}
	if c, err := resourceversion.CompareResourceVersion(version, last.version); err != nil || c >= 0 {
		return stored
	}
	return last.value
}

// afterMerge is what stored becomes when result is merged into it, as the
// API server applies the JSON merge patch of a timer's result.
func afterMerge(stored, result any) any {
	patch, ok := result.(map[string]any)
	if !ok {
		return state.DeepCopyJSON(result)
	}
	target, _ := state.DeepCopyJSON(stored).(map[string]any)
	if target == nil {
		target = map[string]any{}
	}
	return state.ApplyMergePatch(target, patch)
}

// endTimerRun records the verdict on a run that ended at end and schedules
// the timer's next run, unless the timer was stopped while it ran. It
// reports whether the timer failed for good: as in Kopf, such a timer stops
// for this object (in this process) and no longer holds its finalizer;
// and whether it was stopped while it ran and was the object's last run
// under way, which held the object (see Stop).
func (s *Spawner) endTimerRun(run *timerRun, v policy.Verdict, end time.Time) (failedForGood, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, t := run.o, run.t
	o.running--
	if o.timer(t.key.id) != t {
		s.forgetIdleLocked(t.key.obj, o)
		return false, o.running == 0
	}
	if run.wrote != nil {
		t.written = run.wrote
	}
	t.unsent = nil
	if v.Outcome == policy.Retrying {
		t.unsent = run.unsent // sent again by the next attempt, if the function ran
	}
	switch v.Outcome {
	case policy.Retrying:
		t.attempts++
		run.c.Log.Error(v.Err, "timer failed; it will be retried", "retryIn", v.Delay) // an error, as Kopf logs it
		s.schedule(t, v.Delay)
		return false, false
	case policy.Failed:
		s.dropTimersLocked(o, func(other *timerState) bool { return other == t })
		o.finish(t.key.id)
		return true, false
	}
	if v.Ignored {
		run.c.Log.Info("timer failed; the error is ignored as configured", "error", v.Err.Error())
	}
	t.attempts = 0
	t.ranFor = run.changedAt
	if t.reg.Options.Interval > 0 {
		s.schedule(t, time.Until(t.nextRun(end)))
	}
	return false, false
}

// nextRun is when a timer with an interval runs next after a run that ended
// at end: an interval later, or for a sharp timer at the next point of the
// grid its first run began.
func (t *timerState) nextRun(end time.Time) time.Time {
	opts := t.reg.Options
	if !opts.Sharp {
		return end.Add(opts.Interval)
	}
	periods := end.Sub(t.first)/opts.Interval + 1
	return t.first.Add(periods * opts.Interval)
}

// schedule puts a timer's next run in the queue and remembers when it is due.
func (s *Spawner) schedule(t *timerState, delay time.Duration) {
	t.due = time.Now().Add(delay)
	s.queue.add(t, t.due)
}
