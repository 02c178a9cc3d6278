package spec

import (
	"errors"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Extras are the engine's side of one handler call, which the handler's
// context carries unexported: how to post Events about the object, and what
// the call hands back besides its result (sub-handlers, admission warnings).
type Extras[C, A any] struct {
	// Post posts an Event about the object; nil where there is no object.
	Post func(eventType, reason, message string)
	// PostAbout posts an Event about another object, related to the
	// handled one; nil where there is no object.
	PostAbout func(obj client.Object, eventType, reason, message string)

	// Result returns the result a handler of the object has (what earlier
	// handlers of the same reconcile returned, over what is stored), and
	// whether there is one; nil where there are no results.
	Result func(id string) (any, bool)

	// Subs are the sub-handlers the call registered, and subProblems what
	// was wrong with the bad ones.
	Subs        []*Handler[C, A]
	subProblems []string

	// Warnings are the warnings an admission handler added.
	Warnings []string

	// SubsAllowed is true for the calls of change handlers, the only ones
	// whose sub-handlers the engine runs.
	SubsAllowed bool
}

// AddSub records a sub-handler registered during the call, or, with
// problems, a bad one.
func (x *Extras[C, A]) AddSub(h *Handler[C, A], problems ...string) {
	if len(problems) > 0 {
		x.subProblems = append(x.subProblems, problems...)
		return
	}
	x.Subs = append(x.Subs, h)
}

// SubErr reports the bad sub-handler registrations of the call, or nil.
func (x *Extras[C, A]) SubErr() error {
	if len(x.subProblems) == 0 {
		return nil
	}
	return errors.New(joinProblems(x.subProblems))
}

// DaemonControl connects a running daemon with the engine that runs it.
type DaemonControl[C any] struct {
	// Cause is the daemon's context; the engine sets its Retry before each
	// start.
	Cause C
	// Latest returns the newest version of the object, in the handler's Go
	// type.
	Latest func() client.Object

	once     sync.Once
	stopping chan struct{}
	mu       sync.Mutex
	reason   string
}

// NewDaemonControl returns a control for one daemon.
func NewDaemonControl[C any](c C, latest func() client.Object) *DaemonControl[C] {
	return &DaemonControl[C]{Cause: c, Latest: latest, stopping: make(chan struct{})}
}

// Stop asks the daemon to stop; later calls keep the first reason.
func (d *DaemonControl[C]) Stop(reason string) {
	d.once.Do(func() {
		d.mu.Lock()
		d.reason = reason
		d.mu.Unlock()
		close(d.stopping)
	})
}

// Stopping is closed once Stop was called.
func (d *DaemonControl[C]) Stopping() <-chan struct{} { return d.stopping }

// Reason is the reason given to Stop, or "".
func (d *DaemonControl[C]) Reason() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reason
}
