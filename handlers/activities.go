package handlers

import (
	"context"
	"fmt"
)

// ActivityFunc is an operator-level handler: OnStartup or OnCleanup.
type ActivityFunc func(ctx context.Context, c *Cause) error

// ProbeFunc contributes one entry to the operator's probe results; see
// OnProbe.
type ProbeFunc func(ctx context.Context, c *Cause) (any, error)

// Activity is one operator-level registration.
type Activity struct {
	// Kind is "startup", "cleanup" or "probe".
	Kind string
	// Options are the handler's options; ID, Param and the error settings
	// (Retries, Timeout, Backoff, Errors) apply.
	Options Options
	// Source is where it was registered.
	Source string
	// Run runs a startup or cleanup handler.
	Run ActivityFunc
	// Probe runs a probe.
	Probe ProbeFunc
}

// String names the activity for messages.
func (a *Activity) String() string {
	return fmt.Sprintf("%s handler %q (registered at %s)", a.Kind, a.Options.ID, a.Source)
}

// OnStartup registers fn to run once when the operator starts, before any
// object is handled. Errors follow the handler error model (a temporary
// error is retried); a permanent failure stops the operator with the error.
func OnStartup(r *Registry, fn ActivityFunc, opts ...Option) {
	r.addActivity(&Activity{Kind: "startup", Run: fn}, fn, fn == nil, opts)
}

// OnCleanup registers fn to run once when the operator stops gracefully,
// after the handling of objects has stopped. It is not run when the process
// is killed.
func OnCleanup(r *Registry, fn ActivityFunc, opts ...Option) {
	r.addActivity(&Activity{Kind: "cleanup", Run: fn}, fn, fn == nil, opts)
}

// OnProbe registers fn to contribute to the operator's health: its result
// appears under its id in the probe results (JSON), and an error makes the
// health check fail. Results are cached for a short time, so frequent
// health checks do not call fn each time.
func OnProbe(r *Registry, fn ProbeFunc, opts ...Option) {
	r.addActivity(&Activity{Kind: "probe", Probe: fn}, fn, fn == nil, opts)
}

// Activities returns the operator-level registrations in registration order.
func (r *Registry) Activities() []*Activity {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Activity(nil), r.activities...)
}

func (r *Registry) addActivity(a *Activity, fn any, nilFn bool, opts []Option) {
	a.Source = callerSource()
	for _, o := range opts {
		if o != nil {
			o.ApplyToHandler(&a.Options)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.Options.ID == "" {
		a.Options.ID = a.Kind + "_fn"
		if !nilFn {
			if name, ok := funcName(fn); ok {
				a.Options.ID = name
			}
		}
	}
	var problems []string
	if nilFn {
		problems = append(problems, "the handler function is nil")
	}
	problems = append(problems, a.Options.problems...)
	o := a.Options
	if len(o.Labels)+len(o.Annotations) > 0 || o.When != nil || o.Field != "" || !o.Kind.Empty() || o.Resource != "" {
		problems = append(problems, "filters and kinds are for resource handlers, not operator-level ones")
	}
	for _, other := range r.activities {
		if other.Kind == a.Kind && other.Options.ID == a.Options.ID {
			problems = append(problems, fmt.Sprintf("id %q is already used by the %s handler registered at %s", a.Options.ID, a.Kind, other.Source))
		}
	}
	if len(problems) > 0 {
		r.errs = append(r.errs, fmt.Errorf("bad registration of %s: %s", a, joinProblems(problems)))
		return
	}
	r.activities = append(r.activities, a)
}
