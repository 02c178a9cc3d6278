package reconcile

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// worker runs due timers until the queue shuts down.
func (s *spawner) worker() {
	defer s.wg.Done()
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		s.runTimer(key)
		s.queue.Done(key)
	}
}

// runTimer runs one due timer (unless it is gone, or its object is not idle
// long enough yet) and schedules its next run.
func (s *spawner) runTimer(key timerKey) {
	s.k.shared.busy.Add(1) // before the gate check, so that a pause can wait for it
	defer s.k.shared.busy.Add(-1)
	s.mu.Lock()
	o := s.objects[key.obj]
	if o == nil || s.ctx == nil || s.ctx.Err() != nil || !s.k.shared.gate.open() {
		s.mu.Unlock()
		return
	}
	t := o.timers[key.id]
	if t == nil {
		s.mu.Unlock()
		return
	}
	opts := t.reg.Options
	now := time.Now()
	if opts.Idle > 0 {
		if quiet := now.Sub(o.changedAt); quiet < opts.Idle {
			s.queue.AddAfter(key, opts.Idle-quiet)
			s.mu.Unlock()
			return
		}
		if opts.Interval <= 0 && t.ranFor.Equal(o.changedAt) {
			s.mu.Unlock() // already ran in this quiet period; the next change re-adds it
			return
		}
	}
	if !t.due.IsZero() {
		timerLateness.WithLabelValues(s.k.name, opts.ID).Observe(now.Sub(t.due).Seconds())
		t.due = time.Time{}
	}
	// A private copy: the write below decodes the response into it.
	obj, changedAt := o.latest.DeepCopyObject().(client.Object), o.changedAt
	if t.attempts == 0 {
		t.started = now
	}
	if t.first.IsZero() {
		t.first = now
	}
	c := s.newCall(t.reg, obj, t.attempts, t.started)
	patch := &spec.Patch{}
	c.Patch = (*handlers.Patch)(patch)
	ctx := s.ctx
	s.mu.Unlock()

	result, err := s.k.call(ctx, t.reg, obj, c)
	if err == nil {
		if result != nil {
			status, _ := statusOf(obj)
			if changes(status[opts.ID], result) {
				spec.MergeStatus(patch, opts.ID, result)
			}
		}
		if werr := s.k.sendPatch(ctx, obj, patch); werr != nil {
			err = handlers.Temporary(werr, 0)
		}
	}
	end := time.Now()
	v := judge(opts, s.k.opts.DefaultBackoff, err, t.attempts+1, t.started, end)
	handlerCalls.WithLabelValues(s.k.name, opts.ID, v.outcome.String()).Inc()

	s.mu.Lock()
	if o.timers[key.id] != t {
		s.mu.Unlock()
		return // stopped while running
	}
	switch v.outcome {
	case retrying:
		t.attempts++
		c.Log.Info("timer failed; it will be retried", "error", v.err.Error(), "retryIn", v.delay)
		s.schedule(key, t, v.delay)
		s.mu.Unlock()
		return
	case failed:
		// As in Kopf, a timer that fails for good stops for this object (in
		// this process), and no longer holds its finalizer.
		delete(o.timers, key.id)
		o.finished[key.id] = true
		s.mu.Unlock()
		c.Log.Error(v.err, "timer failed permanently; it stops for this object")
		s.k.failedForGood(obj, opts.ID, v.err)
		s.wakeUp(obj)
		return
	}
	defer s.mu.Unlock()
	if v.ignored {
		c.Log.Info("timer failed; the error is ignored as configured", "error", v.err.Error())
	}
	t.attempts = 0
	t.ranFor = changedAt
	if opts.Interval <= 0 {
		return
	}
	next := end.Add(opts.Interval)
	if opts.Sharp {
		periods := end.Sub(t.first)/opts.Interval + 1
		next = t.first.Add(periods * opts.Interval)
	}
	s.schedule(key, t, time.Until(next))
}

// schedule puts a timer's next run in the queue and remembers when it is due.
func (s *spawner) schedule(key timerKey, t *timerState, delay time.Duration) {
	t.due = time.Now().Add(delay)
	s.queue.AddAfter(key, delay)
}
