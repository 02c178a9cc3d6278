package spawn

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/policy"
	"github.com/gopf-dev/gopf/internal/spec"
)

// startDaemonLocked starts one daemon for an object in its own goroutine.
func (s *Spawner) startDaemonLocked(key types.NamespacedName, o *spawned, r *contract.Handler) {
	// The daemon's context ends when gopf cancels it (after the stop signal
	// and CancellationBackoff), not directly with the manager's, so that a
	// daemon always learns why it stops.
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	d := &daemonState{reg: r, cancel: cancel, done: make(chan struct{}), abandoned: make(chan struct{})}
	latest := func() client.Object {
		s.mu.Lock()
		obj := o.latest
		s.mu.Unlock()
		typed, err := s.k.ObjectFor(r, obj)
		if err != nil {
			return nil
		}
		return typed
	}
	d.ctl = spec.NewDaemonControl(s.newCall(r, o.latest, 0, time.Now()), latest)
	o.daemons[r.Options.ID] = d
	metrics.SpawnedRunning.WithLabelValues(s.opts.Name, "daemon").Inc()
	s.k.AddBusy(1) // a paused operator is busy until its daemons return
	delay := s.initialDelay(r, o.latest)
	go s.runDaemon(ctx, key, o, d, delay)
}

// runDaemon is the daemon's goroutine: it runs the function, again after a
// temporary error, until the function is done or asked to stop; then it
// forgets the daemon.
func (s *Spawner) runDaemon(ctx context.Context, key types.NamespacedName, o *spawned, d *daemonState, delay time.Duration) {
	defer metrics.SpawnedRunning.WithLabelValues(s.opts.Name, "daemon").Dec()
	defer s.k.AddBusy(-1)
	defer close(d.done)
	defer d.cancel()
	forGood := s.runDaemonAttempts(ctx, o, d, delay)
	s.wakeUp(s.daemonEnded(key, o, d, forGood))
}

// runDaemonAttempts runs the daemon's function, first after delay and again
// after each temporary error, until it returns for good or the daemon is
// asked to stop. It reports whether the daemon is done for good with the
// object: it returned, or failed permanently, rather than being stopped.
func (s *Spawner) runDaemonAttempts(ctx context.Context, o *spawned, d *daemonState, delay time.Duration) (forGood bool) {
	log := d.ctl.Cause.Log
	var started time.Time
	for attempt := 1; ; attempt++ {
		if !sleepUnlessStopped(delay, d.ctl.Stopping()) {
			return false
		}
		now := time.Now()
		if attempt == 1 {
			started = now
		} else {
			// The daemon's lines say which retry this is.
			s.mu.Lock()
			obj := o.latest
			s.mu.Unlock()
			log = s.newCall(d.reg, obj, attempt-1, started).Log
			d.ctl.Cause.Log = log
		}
		d.ctl.Cause.Retry, d.ctl.Cause.Started, d.ctl.Cause.Runtime = attempt-1, started, now.Sub(started)
		if d.ctl.Cause.Patch == nil {
			d.ctl.Cause.Patch = &handlers.Patch{}
		}
		err := spec.Protect(log, func() error { return d.reg.RunDaemon(ctx, d.ctl) })
		if werr := s.applyDaemonPatch(o, d); werr != nil {
			// Kept for the next attempt, if there is one: a daemon that is
			// done is not started again only to write its patch.
			log.Error(werr, "the daemon's patch could not be applied")
		}
		if d.ctl.Reason() != "" {
			log.V(1).Info("daemon stopped", "reason", d.ctl.Reason())
			return false
		}
		v := policy.Judge(d.reg.Options, s.opts.DefaultBackoff, err, attempt, started, time.Now())
		metrics.HandlerCalls.WithLabelValues(s.opts.Name, d.reg.Options.ID, v.Outcome.String()).Inc()
		if v.Outcome != policy.Retrying {
			s.daemonDone(o, d, v)
			return true
		}
		log.Error(v.Err, "daemon failed; it will be started again", "retryIn", v.Delay) // an error, as Kopf logs it
		delay = v.Delay
	}
}

// daemonDone reports a daemon that is not started again for the object: it
// returned, failed permanently, or failed with an error that is ignored.
func (s *Spawner) daemonDone(o *spawned, d *daemonState, v policy.Verdict) {
	log := d.ctl.Cause.Log
	switch {
	case v.Outcome == policy.Failed:
		log.Error(v.Err, "daemon failed permanently; it is not started again for this object")
		s.mu.Lock()
		obj := o.latest
		s.mu.Unlock()
		s.k.FailedForGood(obj, d.reg.Options.ID, v.Err)
	case v.Ignored:
		log.Info("daemon failed; the error is ignored as configured and it is not started again for this object", "error", v.Err.Error())
	default:
		log.Info("daemon returned; it is not started again for this object")
	}
}

// daemonEnded forgets a daemon whose goroutine ends (unless another took
// its place, or gopf abandoned it), and the object too once nothing of it
// runs or is wanted; a daemon done for good is not started again. It
// returns the object, to reconcile again: its finalizer may go now.
func (s *Spawner) daemonEnded(key types.NamespacedName, o *spawned, d *daemonState, forGood bool) client.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := d.reg.Options.ID
	if o.daemons[id] == d {
		delete(o.daemons, id)
		if forGood {
			o.finished[id] = true
		}
	}
	if len(o.daemons) == 0 && len(o.wanted) == 0 && s.objects[key] == o {
		delete(s.objects, key)
	}
	return o.latest
}

// applyDaemonPatch sends what the daemon put in its Patch during the attempt
// that just ended, as Kopf applies a daemon's patch after each attempt, and
// gives the daemon an empty one; an unsent patch stays for the next attempt.
func (s *Spawner) applyDaemonPatch(o *spawned, d *daemonState) error {
	p := (*spec.Patch)(d.ctl.Cause.Patch)
	if p.Empty() {
		return nil
	}
	s.mu.Lock()
	// A private copy: the write decodes the response into it.
	obj := o.latest.DeepCopyObject().(client.Object)
	s.mu.Unlock()
	// Applied also when the daemon returns because the operator stops.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), exitPatchTimeout)
	defer cancel()
	if err := s.k.SendPatch(ctx, obj, p); err != nil {
		return err
	}
	d.ctl.Cause.Patch = &handlers.Patch{}
	return nil
}

// exitPatchTimeout bounds the write of a daemon's patch once the operator
// stops, as the engine bounds its writes then.
const exitPatchTimeout = 10 * time.Second

// stopDaemonLocked asks a daemon to stop, and escalates in the background:
// after CancellationBackoff its context is cancelled; after a further
// CancellationTimeout (if set) gopf gives up on it.
func (s *Spawner) stopDaemonLocked(d *daemonState, reason string) {
	d.ctl.Stop(reason)
	if d.escalated {
		return
	}
	d.escalated = true
	opts := d.reg.Options
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !waitDone(d.done, opts.CancellationBackoff) {
			d.cancel()
			if opts.CancellationTimeout > 0 && !waitDone(d.done, opts.CancellationTimeout) {
				d.ctl.Cause.Log.Info("WARNING: the daemon did not stop in time; gopf abandons it and releases the object",
					"reason", reason, "timeout", opts.CancellationTimeout)
				s.abandon(d)
			}
		}
	}()
}

// abandon forgets a daemon that would not stop, as if it had returned.
func (s *Spawner) abandon(d *daemonState) {
	close(d.abandoned)
	s.mu.Lock()
	var obj client.Object
	for key, o := range s.objects {
		if o.daemons[d.reg.Options.ID] == d {
			delete(o.daemons, d.reg.Options.ID)
			obj = o.latest
			if len(o.daemons) == 0 && len(o.wanted) == 0 {
				delete(s.objects, key)
			}
		}
	}
	s.mu.Unlock()
	if obj != nil {
		s.wakeUp(obj)
	}
}

// waitDone waits up to d for done; it reports whether done closed.
func waitDone(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// sleepUnlessStopped sleeps d; it reports false if stop closed first.
func sleepUnlessStopped(d time.Duration, stop <-chan struct{}) bool {
	return !waitDone(stop, d)
}
