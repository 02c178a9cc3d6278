package reconcile

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
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
	if t.retries == 0 {
		t.started = now
	}
	if t.first.IsZero() {
		t.first = now
	}
	c := s.newCause(t.reg, obj, t.retries, t.started)
	c.Patch = &handlers.Patch{}
	ctx := s.ctx
	s.mu.Unlock()

	result, err := s.k.call(ctx, t.reg, nil, obj, c)
	if err == nil {
		if result != nil {
			status, _ := statusOf(obj)
			if changes(status[opts.ID], result) {
				c.Patch.MergeStatus(opts.ID, result)
			}
		}
		if werr := s.k.sendPatch(ctx, obj, c.Patch); werr != nil {
			err = handlers.Temporary(werr, 0)
		}
	}
	delay, ok := retryDelay(opts, s.k.opts.DefaultBackoff, err)
	end := time.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	if o.timers[key.id] != t {
		return // stopped while running
	}
	switch {
	case !ok && delay >= 0:
		t.retries++
		c.Log.Info("timer failed; it will be retried", "error", err.Error(), "retryIn", delay)
		s.schedule(key, t, delay)
		return
	case !ok:
		c.Log.Error(err, "timer failed permanently; it runs again at its next interval")
	}
	t.retries = 0
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
