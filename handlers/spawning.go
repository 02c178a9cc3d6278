package handlers

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OnTimer registers fn to be called every interval for each selected object
// while it exists. A non-nil result goes to status.<id>, written only when it
// differs from what status holds, so a timer that keeps returning the same
// value writes nothing. One timer never runs twice at once for one object.
// Errors follow the handler error model: a TemporaryError (or another error,
// by the error mode) retries after its delay instead of the interval.
//
// With Idle, the timer runs only after the object's essence has not changed
// for that long; an interval of 0 with Idle runs once per quiet period.
// Timers need gopf's finalizer, so that they stop before the object goes.
func OnTimer[T client.Object](r *Registry, interval time.Duration, fn HandlerFunc[T], opts ...Option) {
	o := append([]Option{optionFunc(func(o *Options) { o.Interval = interval; o.spawn = spawnTimer })}, opts...)
	register(r, "", fn, nil, nil, o)
}

// DaemonFunc is a long-running function per object; see OnDaemon.
type DaemonFunc[T client.Object] func(ctx context.Context, d *Daemon[T]) error

// OnDaemon registers fn to run, in its own goroutine, for each selected
// object from when it appears (or starts matching the filters) until it is
// deleted, stops matching, or the operator stops. fn should return when
// d.Stopping() is closed; ctx is cancelled CancellationBackoff later. On
// deletion gopf's finalizer holds the object until the daemon has returned
// (or, with CancellationTimeout, until gopf gives up on it and logs a
// warning).
//
// A daemon that returns nil, or fails permanently, is not started again for
// that object in this process. To run again later, return a TemporaryError
// with a delay.
func OnDaemon[T client.Object](r *Registry, fn DaemonFunc[T], opts ...Option) {
	o := append([]Option{optionFunc(func(o *Options) { o.spawn = spawnDaemon })}, opts...)
	register[T](r, "", nil, nil, fn, o)
}

// StopReason says why a daemon is asked to stop.
type StopReason string

// The reasons a daemon is asked to stop.
const (
	// StopDeleted: the object is being deleted.
	StopDeleted StopReason = "deleted"
	// StopFiltersMismatch: the object no longer matches the daemon's filters.
	StopFiltersMismatch StopReason = "filters mismatch"
	// StopOperatorExiting: the operator is shutting down.
	StopOperatorExiting StopReason = "operator exiting"
	// StopOperatorPausing: the operator pauses, because a peer with a
	// higher priority is alive; it starts the daemon again when it resumes.
	StopOperatorPausing StopReason = "operator pausing"
)

// Daemon is what a daemon function receives: the Cause fields (name,
// namespace, log, memo, param, retry) and the signals of its lifetime.
type Daemon[T client.Object] struct {
	*Cause
	ctl *DaemonControl
}

// Object returns the newest version of the object the operator has seen.
func (d *Daemon[T]) Object() T {
	obj, _ := d.ctl.Latest().(T)
	return obj
}

// Stopping is closed when the daemon is asked to stop.
func (d *Daemon[T]) Stopping() <-chan struct{} { return d.ctl.Stopping() }

// StopReason says why the daemon is asked to stop, or "" while it is not.
func (d *Daemon[T]) StopReason() StopReason { return d.ctl.Reason() }

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

// DaemonControl connects a running daemon with the engine that runs it. The
// engine creates one per daemon run; users receive it inside a Daemon.
type DaemonControl struct {
	// Cause carries the object's identity, log, memo and param. Its Patch is
	// nil: daemons write through their own client.
	Cause *Cause
	// Latest returns the newest version of the object, in the handler's Go
	// type.
	Latest func() client.Object

	once     sync.Once
	stopping chan struct{}
	mu       sync.Mutex
	reason   StopReason
}

// NewDaemonControl returns a control for one daemon run.
func NewDaemonControl(c *Cause, latest func() client.Object) *DaemonControl {
	return &DaemonControl{Cause: c, Latest: latest, stopping: make(chan struct{})}
}

// Stop asks the daemon to stop; later calls keep the first reason.
func (c *DaemonControl) Stop(reason StopReason) {
	c.once.Do(func() {
		c.mu.Lock()
		c.reason = reason
		c.mu.Unlock()
		close(c.stopping)
	})
}

// Stopping is closed once Stop was called.
func (c *DaemonControl) Stopping() <-chan struct{} { return c.stopping }

// Reason is the reason given to Stop, or "".
func (c *DaemonControl) Reason() StopReason {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// spawnKind marks timers and daemons among registrations.
type spawnKind int

const (
	spawnNone spawnKind = iota
	spawnTimer
	spawnDaemon
)

// InitialDelay postpones a timer's or daemon's first run after the object
// appears.
func InitialDelay(d time.Duration) Option {
	if d < 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "InitialDelay cannot be negative") })
	}
	return Options{InitialDelay: d}
}

// InitialDelayFunc computes the initial delay from the object, e.g. for
// jitter so that timers of many objects do not fire together.
func InitialDelayFunc[T client.Object](fn func(obj T) time.Duration) Option {
	if fn == nil {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "InitialDelayFunc(nil)") })
	}
	return Options{InitialDelayFunc: func(obj client.Object) time.Duration {
		typed, ok := obj.(T)
		if !ok {
			return 0
		}
		return fn(typed)
	}}
}

// Idle makes a timer run only once the object's essence has not changed for
// d.
func Idle(d time.Duration) Option {
	if d <= 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Idle must be positive") })
	}
	return Options{Idle: d}
}

// Sharp aligns a timer's runs to multiples of the interval from its first
// run, instead of sleeping the interval after each run ends.
func Sharp() Option { return Options{Sharp: true} }

// CancellationBackoff is how long a daemon asked to stop may take before its
// context is cancelled. Default: 0, cancel at once.
func CancellationBackoff(d time.Duration) Option {
	if d < 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "CancellationBackoff cannot be negative") })
	}
	return Options{CancellationBackoff: d}
}

// CancellationTimeout is how long gopf waits for a daemon after cancelling
// its context before it gives up on it: it logs a warning, forgets the
// goroutine and releases the object's finalizer. Default: 0, wait as long as
// it takes.
func CancellationTimeout(d time.Duration) Option {
	if d <= 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "CancellationTimeout must be positive") })
	}
	return Options{CancellationTimeout: d}
}
