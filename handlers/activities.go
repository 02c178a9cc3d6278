package handlers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// OnStartup registers fn to run once when the operator starts, before any
// object is handled. Its Cause, as for every operator-level handler, carries
// the operator's memo, indexes and client, and no object. Errors follow the handler error policy (a temporary
// error is retried within Retries and Timeout); a permanent failure stops
// the operator with the error.
func OnStartup(r *Registry, fn func(ctx context.Context, c *Cause) error, opts ...ActivityOption) {
	registerActivity(r, spec.KindStartup, fn, fn == nil, func(ctx context.Context, c *Cause) (any, error) { return nil, fn(ctx, c) }, apply(opts))
}

// OnCleanup registers fn to run once when the operator stops gracefully,
// after the handling of objects has stopped. It is not run when the process
// is killed. Errors follow the handler error policy, bounded by the
// engine's cleanup timeout.
func OnCleanup(r *Registry, fn func(ctx context.Context, c *Cause) error, opts ...ActivityOption) {
	registerActivity(r, spec.KindCleanup, fn, fn == nil, func(ctx context.Context, c *Cause) (any, error) { return nil, fn(ctx, c) }, apply(opts))
}

// OnProbe registers fn to contribute to the operator's health: its result
// appears under its id in the probe results (JSON), and an error makes the
// health check fail. Results are cached for a short time, so frequent
// health checks do not call fn each time. A probe is not retried (the next
// health check calls it again), so it takes no error policy options.
func OnProbe(r *Registry, fn func(ctx context.Context, c *Cause) (any, error), opts ...ProbeOption) {
	registerActivity(r, spec.KindProbe, fn, fn == nil, fn, apply(opts))
}

func registerActivity(r *Registry, kind spec.Kind, fn any, nilFn bool, call func(ctx context.Context, c *Cause) (any, error), d *draft) {
	h := &handler{Kind: kind, Options: d.Options, Source: callerSource()}
	if !nilFn {
		h.Call = func(ctx context.Context, _ client.Object, c *Cause) (any, error) { return call(ctx, c) }
	}
	r.add(h, fn, nilFn, d.problems)
}
