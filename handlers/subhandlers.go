package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Register adds a sub-handler for this call: a function run after the
// calling handler returns, with its own id (<parent-id>/<id>), its own
// progress and retries, and its result in status.<parent-id>/<id>. The
// parent is called again on later reconciles while any sub-handler is
// unfinished, so it must register the same sub-handlers every time and do
// nothing else with side effects. A sub-handler runs for the same object and
// cause as its parent, so it takes no filters; it takes the error policy
// options. fn's Cause is its own: the parent's object and cause, with its
// own HandlerID, Retry and Started. Register is for change handlers only:
// elsewhere it logs an error and the sub-handler does not run. To run
// sub-handlers within the call instead, see Execute.
func (c *Cause) Register(id string, fn func(ctx context.Context, c *Cause) (any, error), opts ...SubOption) {
	if c.x == nil {
		c.x = &extras{SubsAllowed: true}
	}
	if !c.x.SubsAllowed {
		c.Log.Error(errSubsOnlyForChanges, "sub-handler not run", "subhandler", id)
		return
	}
	h, problems := newSub(c.HandlerID, Sub(id, fn, opts...), c.x.Used)
	c.x.AddSub(h, problems...)
}

var errSubsOnlyForChanges = errors.New("Cause.Register is for change handlers only")

// SubHandler is a sub-handler for Execute; Sub makes one.
type SubHandler struct {
	id     string
	fn     func(ctx context.Context, c *Cause) (any, error)
	opts   []SubOption
	source string // where Sub was called
}

// Sub makes a sub-handler for Execute: id is its id under the parent's
// (<parent-id>/<id>), which keys its progress and result, so it must be
// the same on every call of the parent and unique among the parent's
// sub-handlers; opts are the error policy options (Errors, Retries,
// Timeout, Backoff, WithParam). fn gets a Cause of its own, as a
// registered sub-handler's (see Register).
func Sub(id string, fn func(ctx context.Context, c *Cause) (any, error), opts ...SubOption) SubHandler {
	return SubHandler{id: id, fn: fn, opts: opts, source: callerSource()}
}

// newSub builds the sub-handler s of the handler parentID, with what is
// wrong with it; used reports ids the parent's call has used already.
func newSub(parentID string, s SubHandler, used func(id string) bool) (*handler, []string) {
	d := apply(s.opts)
	d.ID = parentID + "/" + s.id
	problems := d.problems
	switch {
	case s.id == "":
		problems = append(problems, "a sub-handler has an empty id")
	case s.fn == nil:
		problems = append(problems, fmt.Sprintf("sub-handler %q is nil", d.ID))
	case used(d.ID):
		problems = append(problems, fmt.Sprintf("sub-handler id %q is registered twice", d.ID))
	}
	fn := s.fn
	h := &handler{Kind: spec.KindSub, Options: d.Options, Source: s.source}
	h.Call = func(ctx context.Context, _ client.Object, sc *Cause) (any, error) { return fn(ctx, sc) }
	for i, p := range problems {
		problems[i] = fmt.Sprintf("%s: %s", h, p)
	}
	return h, problems
}

// Execute runs sub-handlers now, within the calling change handler, in the
// given order (Kopf's kopf.execute). Each has its progress kept as a
// registered sub-handler's (see Register), in the object's stored state and
// in the same write as the rest of the reconcile: one that is done is not
// run again, one that asked for a retry runs again when its delay is over,
// one that failed for good stays failed. With no sub-handlers given,
// Execute runs those registered with Register so far, which then do not
// run again after the parent returns.
//
// Execute returns nil when all of them are done, and otherwise an error
// for the parent to return:
//
//   - while any is unfinished, a TemporaryError wrapping
//     ErrSubHandlersUnfinished, due when the first of them is: gopf calls
//     the parent again then, and the parent calls Execute again with the
//     same sub-handlers (so before Execute the parent must do nothing with
//     side effects). Waiting for sub-handlers is not a failed attempt: it
//     counts against neither the parent's Retries nor its log of failures;
//   - once all have finished and any failed for good, a PermanentError
//     wrapping ErrSubHandlerFailed that names them. Kopf lets the parent
//     carry on as if they succeeded; gopf leaves the choice to the parent,
//     which returns the error to fail (the usual) or goes on without it;
//   - a PermanentError for bad sub-handlers (an empty or repeated id, a nil
//     function, a bad option), none of which run.
//
// The results of the sub-handlers are the parent's to read at once:
// c.Result(c.HandlerID + "/" + id). Sub-handlers may Execute their own.
// Execute is for change handlers (create, update, delete, resume, field)
// and their sub-handlers; elsewhere it returns a PermanentError.
func (c *Cause) Execute(ctx context.Context, subs ...SubHandler) error {
	if c.x == nil || c.x.Execute == nil {
		return Permanent(errExecuteOnlyForChanges)
	}
	var hs []*handler
	var problems []string
	if len(subs) == 0 {
		var err error
		if hs, err = c.x.TakeSubs(); err != nil {
			return Permanent(fmt.Errorf("bad sub-handlers: %w", err))
		}
	}
	for _, s := range subs {
		h, p := newSub(c.HandlerID, s, c.x.Used)
		if len(p) == 0 {
			c.x.Claim(h.Options.ID)
		}
		hs, problems = append(hs, h), append(problems, p...)
	}
	if len(problems) > 0 {
		return Permanent(fmt.Errorf("bad sub-handlers: %s", strings.Join(problems, "; ")))
	}
	if len(hs) == 0 {
		return nil
	}
	out := c.x.Execute(ctx, hs)
	if len(out.Unfinished) > 0 {
		return &TemporaryError{
			Err:   fmt.Errorf("%w: %s", ErrSubHandlersUnfinished, strings.Join(out.Unfinished, ", ")),
			Delay: max(out.Due, time.Millisecond), // zero would mean the default backoff
		}
	}
	if len(out.Failed) > 0 {
		failed := make([]string, len(out.Failed))
		for i, f := range out.Failed {
			failed[i] = fmt.Sprintf("%s: %s", f.ID, f.Message)
		}
		return Permanent(fmt.Errorf("%w: %s", ErrSubHandlerFailed, strings.Join(failed, "; ")))
	}
	return nil
}

// ErrSubHandlersUnfinished and ErrSubHandlerFailed are what Execute's
// errors wrap: some sub-handlers are still to run (the parent is called
// again), or some failed for good.
var (
	ErrSubHandlersUnfinished = errors.New("sub-handlers unfinished")
	ErrSubHandlerFailed      = errors.New("sub-handlers failed")
)

var errExecuteOnlyForChanges = errors.New("Cause.Execute is for change handlers and their sub-handlers only")
