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

// startDaemonLocked starts one daemon for an object (obj, as it is now) in
// its own goroutine.
func (s *Spawner) startDaemonLocked(key types.NamespacedName, o *spawned, r *contract.Handler, obj client.Object) {
	// The daemon's context ends when gopf cancels it (after the stop signal
	// and CancellationBackoff), not directly with the manager's, so that a
	// daemon always learns why it stops.
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	d := &daemonState{reg: r, id: s.identity(obj), cancel: cancel, done: make(chan struct{})}
	d.ctl = spec.NewDaemonControl(s.newCall(r, d.id, 0, time.Now()), func() client.Object { return s.latest(key, d) })
	o.daemons = append(o.daemons, d)
	metrics.SpawnedRunning.WithLabelValues(s.opts.Name, "daemon").Inc()
	s.k.AddBusy(1) // a paused operator is busy until its daemons return
	delay := s.initialDelay(r, obj)
	go s.runDaemon(ctx, key, o, d, delay)
}

// latest is the daemon's Object: the newest version of its object in the
// cache, in the handler's Go type; once the cache no longer holds it (it
// left a narrowed cache's selector), what the daemon's cause knows of it.
func (s *Spawner) latest(key types.NamespacedName, d *daemonState) client.Object {
	obj := s.read(key, d.id.GetUID())
	if obj == nil {
		obj = d.id
	}
	typed, err := s.k.ObjectFor(d.reg, obj)
	if err != nil {
		return nil
	}
	return typed
}

// runDaemon is the daemon's goroutine: it runs the function, again after a
// temporary error, until the function is done or asked to stop; then it
// forgets the daemon.
func (s *Spawner) runDaemon(ctx context.Context, key types.NamespacedName, o *spawned, d *daemonState, delay time.Duration) {
	forGood := s.runDaemonAttempts(ctx, d, delay)
	s.wakeUp(s.daemonEnded(key, o, d, forGood))
	d.cancel()
	close(d.done)
	s.k.AddBusy(-1)
	metrics.SpawnedRunning.WithLabelValues(s.opts.Name, "daemon").Dec()
}

// runDaemonAttempts runs the daemon's function, first after delay and again
// after each temporary error, until it returns for good or the daemon is
// asked to stop. It reports whether the daemon is done for good with the
// object: it returned, or failed permanently, rather than being stopped.
//
// Its frame is below the daemon function's for the daemon's whole life, so
// it keeps nothing but the loop: the work before and after each attempt is
// in functions of their own, whose frames are gone while the daemon runs.
// With a small stack below it, a daemon that sleeps uses little enough of
// its stack for the garbage collector to shrink it to 4 KiB; a frame of a
// kilobyte here kept each daemon at 8 KiB.
func (s *Spawner) runDaemonAttempts(ctx context.Context, d *daemonState, delay time.Duration) (forGood bool) {
	for attempt := 1; ; attempt++ {
		if !sleepUnlessStopped(delay, d.ctl.Stopping()) {
			return false
		}
		s.beginDaemonAttempt(d, attempt)
		err := spec.Protect(d.ctl.Cause.Log, func() error { return d.reg.RunDaemon(ctx, d.ctl) })
		var ended bool
		if ended, forGood, delay = s.endDaemonAttempt(d, attempt, err); ended {
			return forGood
		}
	}
}

// beginDaemonAttempt readies the daemon's cause for an attempt (1 for the
// first).
func (s *Spawner) beginDaemonAttempt(d *daemonState, attempt int) {
	now := time.Now()
	if attempt == 1 {
		d.started = now
	} else {
		// The daemon's lines say which retry this is.
		d.ctl.Cause.Log = s.newCall(d.reg, d.id, attempt-1, d.started).Log
	}
	c := d.ctl.Cause
	c.Retry, c.Started, c.Runtime = attempt-1, d.started, now.Sub(d.started)
	if c.Patch == nil {
		c.Patch = &handlers.Patch{}
	}
}

// endDaemonAttempt applies the daemon's patch after an attempt that
// returned err and judges it: the daemon has ended (for good, or stopped),
// or it runs again after delay.
func (s *Spawner) endDaemonAttempt(d *daemonState, attempt int, err error) (ended, forGood bool, delay time.Duration) {
	log := d.ctl.Cause.Log
	if werr := s.applyDaemonPatch(d); werr != nil {
		// Kept for the next attempt, if there is one: a daemon that is
		// done is not started again only to write its patch.
		log.Error(werr, "the daemon's patch could not be applied")
	}
	if d.ctl.Reason() != "" {
		log.V(1).Info("daemon stopped", "reason", d.ctl.Reason())
		return true, false, 0
	}
	v := policy.Judge(d.reg.Options, s.opts.DefaultBackoff, err, attempt, d.started, time.Now())
	metrics.HandlerCalls.WithLabelValues(s.opts.Name, d.reg.Options.ID, v.Outcome.String()).Inc()
	if v.Outcome != policy.Retrying {
		s.daemonDone(d, v)
		return true, true, 0
	}
	log.Error(v.Err, "daemon failed; it will be started again", "retryIn", v.Delay) // an error, as Kopf logs it
	return false, false, v.Delay
}

// daemonDone reports a daemon that is not started again for the object: it
// returned, failed permanently, or failed with an error that is ignored.
func (s *Spawner) daemonDone(d *daemonState, v policy.Verdict) {
	log := d.ctl.Cause.Log
	switch {
	case v.Outcome == policy.Failed:
		log.Error(v.Err, "daemon failed permanently; it is not started again for this object")
		s.k.FailedForGood(d.id, d.reg.Options.ID, v.Err)
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
	if o.forgetDaemon(d) && forGood {
		o.finish(id)
	}
	s.forgetIdleLocked(key, o)
	return d.id
}

// applyDaemonPatch sends what the daemon put in its Patch during the attempt
// that just ended, as Kopf applies a daemon's patch after each attempt, and
// gives the daemon an empty one; an unsent patch stays for the next attempt.
func (s *Spawner) applyDaemonPatch(d *daemonState) error {
	p := (*spec.Patch)(d.ctl.Cause.Patch)
	if p.Empty() {
		return nil
	}
	// A private copy: the write decodes the response into it. The object
	// the daemon started for, if the cache no longer holds it: the patch
	// fails as it would on any version that is gone.
	obj := s.read(types.NamespacedName{Namespace: d.id.GetNamespace(), Name: d.id.GetName()}, d.id.GetUID())
	if obj == nil {
		obj = d.id.DeepCopyObject().(client.Object)
	}
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
	d.abandoned = make(chan struct{}) // made only now: few daemons ever need it
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
		if o.forgetDaemon(d) {
			obj = d.id
			s.forgetIdleLocked(key, o)
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
