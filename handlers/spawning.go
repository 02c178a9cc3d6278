package handlers

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// OnTimer registers fn to be called every interval for each selected object
// while it exists. A non-nil result goes to status.<id>, written only when it
// differs from what status holds, so a timer that keeps returning the same
// value writes nothing. One timer never runs twice at once for one object.
// Each run gets the object as the operator's cache holds it when the run
// starts (as Kopf's timers get the latest body).
//
// Errors follow the handler error policy: a TemporaryError (or another
// error, by the error mode) retries the run after its delay instead of the
// interval, within Retries and Timeout; a PermanentError, or running out of
// attempts or time, stops the timer for that object in this process (as in
// Kopf), with a log line and a HandlerFailed Event.
//
// With Idle, the timer runs only after the object's essence has not changed
// for that long; an interval of 0 with Idle runs once per quiet period.
// Timers need gopf's finalizer, so that they stop before the object goes:
// a run under way when the object is deleted holds the finalizer until it
// returns, as Kopf's finalizer waits for a timer's task.
func OnTimer[T client.Object](r *Registry, interval time.Duration, fn HandlerFunc[T], opts ...TimerOption) {
	registerCall(r, spec.KindTimer, fn, fn, apply(opts, set(func(d *draft) { d.Interval = interval })))
}

// OnDaemon registers fn, a long-running function, to run in its own
// goroutine for each selected object from when it appears (or starts
// matching the filters) until it is deleted, stops matching, or the
// operator stops. Its d is the daemon's lifetime and the newest object; c
// is the Cause every handler gets, for the whole run of the function. fn should return when
// d.Stopping() is closed; ctx is cancelled CancellationBackoff later. On
// deletion gopf's finalizer holds the object until the daemon has returned
// (or, with CancellationTimeout, until gopf gives up on it and logs a
// warning).
//
// A daemon that returns nil is not started again for that object in this
// process. Errors follow the handler error policy: a TemporaryError (or
// another error, by the error mode) starts it again after the delay, within
// Retries and Timeout; a PermanentError, or running out of attempts or time,
// ends it for that object in this process.
func OnDaemon[T client.Object](r *Registry, fn func(ctx context.Context, d *Daemon[T], c *Cause) error, opts ...DaemonOption) {
	d := apply(opts)
	h := newHandler[T](spec.KindDaemon, d)
	if fn != nil {
		h.RunDaemon = func(ctx context.Context, ctl *spec.DaemonControl[*Cause]) error {
			if _, ok := ctl.Latest().(T); !ok {
				var zero T
				return Permanent(fmt.Errorf("%s: got %T, want %T", h, ctl.Latest(), zero))
			}
			return fn(ctx, &Daemon[T]{ctl: ctl}, ctl.Cause)
		}
	}
	r.add(h, fn, fn == nil, d.problems)
}

// StopReason says why a daemon is asked to stop.
type StopReason string

// The reasons a daemon is asked to stop.
const (
	// StopDeleted: the object is being deleted.
	StopDeleted StopReason = "deleted"
	// StopHandedOver: the object moves to another replica of a sharded
	// operator (see reconcile.Sharding), which starts its daemons anew.
	StopHandedOver StopReason = "handed over"
	// StopFiltersMismatch: the object no longer matches the daemon's filters.
	StopFiltersMismatch StopReason = "filters mismatch"
	// StopOperatorExiting: the operator is shutting down.
	StopOperatorExiting StopReason = "operator exiting"
	// StopOperatorPausing: the operator pauses, because a peer with a
	// higher priority is alive; it starts the daemon again when it resumes.
	StopOperatorPausing StopReason = "operator pausing"
)

// Daemon is what a daemon function receives besides its Cause: the newest
// object and the signals of its lifetime. The Cause's Patch collects
// changes to the object as a change handler's does; gopf applies them when
// the daemon function returns (after each attempt, whether it succeeded,
// failed or was stopped), as Kopf applies a daemon's patch. A daemon that
// wants changes written while it keeps running writes them itself, through
// the Cause's Client.
type Daemon[T client.Object] struct {
	ctl *spec.DaemonControl[*Cause]
}

// Object returns the newest version of the object the operator's cache
// holds. Once the object has left the cache (possible only where the cache
// is narrowed to what the handlers select, after the object stopped
// matching), it returns an object of type T with only its metadata.
func (d *Daemon[T]) Object() T {
	obj, _ := d.ctl.Latest().(T)
	return obj
}

// Stopping is closed when the daemon is asked to stop.
func (d *Daemon[T]) Stopping() <-chan struct{} { return d.ctl.Stopping() }

// StopReason says why the daemon is asked to stop, or "" while it is not.
func (d *Daemon[T]) StopReason() StopReason { return StopReason(d.ctl.Reason()) }

// Sleep waits for dur or until the daemon is asked to stop; it reports
// whether the whole duration passed.
func (d *Daemon[T]) Sleep(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.ctl.Stopping():
		return false
	}
}

// spawnSetting delays the start of timers and daemons; OnTimer and OnDaemon
// take it.
type spawnSetting struct {
	setting
	forSpawned
}

// InitialDelay postpones a timer's or daemon's first run after the object
// appears.
//
// OnTimer and OnDaemon take it.
func InitialDelay(t time.Duration) spawnSetting {
	return spawnSetting{setting: positive("InitialDelay", t, true, func(d *draft) { d.InitialDelay = t })}
}

// InitialDelayFunc computes the initial delay from the object, e.g. for
// jitter so that timers of many objects do not fire together. It wins over
// InitialDelay.
//
// OnTimer and OnDaemon take it.
func InitialDelayFunc[T client.Object](fn func(obj T) time.Duration) spawnSetting {
	if fn == nil {
		return spawnSetting{setting: rejected("InitialDelayFunc(nil)")}
	}
	return spawnSetting{setting: set(func(d *draft) {
		d.InitialDelayFunc = func(obj client.Object) time.Duration {
			typed, ok := obj.(T)
			if !ok {
				return 0
			}
			return fn(typed)
		}
	})}
}

// timerSetting is an option only OnTimer takes.
type timerSetting struct {
	setting
	forTimer
}

// Idle makes a timer run only once the object's essence has not changed for
// t.
//
// Only OnTimer takes it.
func Idle(t time.Duration) timerSetting {
	return timerSetting{setting: positive("Idle", t, false, func(d *draft) { d.Idle = t })}
}

// Sharp aligns a timer's runs to multiples of the interval from its first
// run, instead of sleeping the interval after each run ends.
//
// Only OnTimer takes it.
func Sharp() timerSetting { return timerSetting{setting: set(func(d *draft) { d.Sharp = true })} }

// daemonSetting is an option only OnDaemon takes.
type daemonSetting struct {
	setting
	forDaemon
}

// CancellationBackoff is how long a daemon asked to stop may take before its
// context is cancelled. Default: 0, cancel at once.
//
// Only OnDaemon takes it.
func CancellationBackoff(t time.Duration) daemonSetting {
	return daemonSetting{setting: positive("CancellationBackoff", t, true, func(d *draft) { d.CancellationBackoff = t })}
}

// CancellationTimeout is how long gopf waits for a daemon after cancelling
// its context before it gives up on it: it logs a warning, forgets the
// goroutine and releases the object's finalizer. Default: 0, wait as long as
// it takes.
//
// Only OnDaemon takes it.
func CancellationTimeout(t time.Duration) daemonSetting {
	return daemonSetting{setting: positive("CancellationTimeout", t, false, func(d *draft) { d.CancellationTimeout = t })}
}
