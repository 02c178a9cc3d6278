package spec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Extras are the engine's side of one handler call, which the handler's
// context carries unexported: how to post Events about the object, and what
// the call hands back besides its result (sub-handlers).
type Extras[C any] struct {
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
	Subs        []*Handler[C]
	subProblems []string

	// Execute runs sub-handlers within the call, in order (Kopf's
	// kopf.execute): those not finished and due, with their progress kept
	// as the progress of registered sub-handlers is. It is nil where the
	// engine cannot run sub-handlers (see SubsAllowed).
	Execute func(ctx context.Context, subs []*Handler[C]) SubsOutcome
	// executed are the ids of the sub-handlers Execute was given so far.
	executed map[string]bool

	// SubsAllowed is true for the calls of change handlers, the only ones
	// whose sub-handlers the engine runs.
	SubsAllowed bool
}

// AddSub records a sub-handler registered during the call, or, with
// problems, a bad one.
func (x *Extras[C]) AddSub(h *Handler[C], problems ...string) {
	if len(problems) > 0 {
		x.subProblems = append(x.subProblems, problems...)
		return
	}
	x.Subs = append(x.Subs, h)
}

// Used reports whether the call used a sub-handler id already, with
// AddSub or Claim.
func (x *Extras[C]) Used(id string) bool {
	if x.executed[id] {
		return true
	}
	for _, h := range x.Subs {
		if h.Options.ID == id {
			return true
		}
	}
	return false
}

// Claim reserves a sub-handler id for Execute; it reports false when the
// call used the id already.
func (x *Extras[C]) Claim(id string) bool {
	if x.Used(id) {
		return false
	}
	if x.executed == nil {
		x.executed = map[string]bool{}
	}
	x.executed[id] = true
	return true
}

// SubsOutcome is how the sub-handlers given to Extras.Execute stand after
// it ran them.
type SubsOutcome struct {
	// Unfinished are the ids of those that are neither done nor failed for
	// good, in the order given.
	Unfinished []string
	// Due is how long until the first unfinished one is due again.
	Due time.Duration
	// Failed are those that failed for good, in the order given.
	Failed []SubFailure
}

// SubFailure is a sub-handler that failed for good, with its last error.
type SubFailure struct {
	ID      string
	Message string
}

// TakeSubs returns the sub-handlers the call registered so far, or what
// was wrong with them, and forgets them, so that the engine does not run
// them again when the call returns.
func (x *Extras[C]) TakeSubs() ([]*Handler[C], error) {
	subs, err := x.Subs, x.SubErr()
	x.Subs, x.subProblems = nil, nil
	for _, h := range subs {
		x.Claim(h.Options.ID)
	}
	return subs, err
}

// SubErr reports the bad sub-handler registrations of the call, or nil.
func (x *Extras[C]) SubErr() error {
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

// Bounded runs call with ctx bounded by the handler's CallTimeout, if it
// has one. When call fails after the bound is over (while ctx itself is
// not), the error says so: the call counts as a failed attempt, retried or
// not as the handler's error policy says.
func Bounded(ctx context.Context, o *Options, call func(ctx context.Context) error) error {
	if o.CallTimeout <= 0 {
		return call(ctx)
	}
	bounded, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	err := call(bounded)
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the call did not finish within its CallTimeout (%s): %w", o.CallTimeout, err)
	}
	return err
}

// AdmissionError is the error of handlers.Deny: it denies an admission
// request with an HTTP-style status code and a message the client sees.
// Users make it with Deny and never need to name it; the webhook finds it
// with errors.As.
type AdmissionError struct {
	// Code is the HTTP status code of the denial; zero means 403 Forbidden.
	Code int
	// Message says why the object is not admitted.
	Message string
}

// Error returns the message.
func (e *AdmissionError) Error() string { return e.Message }

// StatusCode returns Code, or 403 when Code is zero.
func (e *AdmissionError) StatusCode() int {
	if e.Code == 0 {
		return http.StatusForbidden
	}
	return e.Code
}
