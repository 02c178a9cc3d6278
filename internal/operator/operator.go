package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/policy"
	"github.com/gopf-dev/gopf/internal/spec"
)

// activities runs the operator-level handlers: startup handlers when the
// manager starts (the gate opens only once they succeed; a permanent
// failure stops the manager with the error), cleanup handlers when it
// stops gracefully. It is a Runnable on the manager.
type activities struct {
	sh      *engine.Shared
	startup []*contract.Handler
	cleanup []*contract.Handler
	opts    engine.Options
	log     logr.Logger
}

// Start runs the startup handlers, waits for the manager to stop, then runs
// the cleanup handlers.
func (a *activities) Start(ctx context.Context) error {
	a.sh.SetContext(ctx)
	for _, act := range a.startup {
		if err := a.run(ctx, act); err != nil {
			return fmt.Errorf("gopf: %s failed, so the operator stops: %w", act, err)
		}
	}
	a.sh.Gate.SetStarted()
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.CleanupTimeout)
	defer cancel()
	var errs []error
	for _, act := range a.cleanup {
		if err := a.run(cctx, act); err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s failed: %w", act, err))
		}
	}
	return errors.Join(errs...)
}

// run runs one activity until it succeeds, fails for good (by the error
// policy, see judge), or ctx ends.
func (a *activities) run(ctx context.Context, act *contract.Handler) error {
	started := time.Now()
	for attempt := 1; ; attempt++ {
		c := a.sh.OperatorCall(act, a.log.WithValues("activity", act.Kind.String(), "retry", attempt-1))
		c.Retry, c.Started, c.Runtime = attempt-1, started, time.Since(started)
		err := spec.Protect(c.Log, func() error {
			return spec.Bounded(ctx, &act.Options, func(ctx context.Context) error { _, err := act.Call(ctx, nil, c); return err })
		})
		v := policy.Judge(act.Options, a.opts.DefaultBackoff, err, attempt, started, time.Now())
		metrics.HandlerCalls.WithLabelValues("operator", act.Options.ID, v.Outcome.String()).Inc()
		switch v.Outcome {
		case policy.Succeeded:
			if v.Ignored {
				c.Log.Info("activity failed; the error is ignored as configured", "error", v.Err.Error())
			}
			c.Log.V(1).Info("activity succeeded")
			return nil
		case policy.Failed:
			return v.Err
		}
		c.Log.Info("activity failed; it will be retried", "error", v.Err.Error(), "retryIn", v.Delay)
		t := time.NewTimer(v.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("stopped while retrying: %w", v.Err)
		case <-t.C:
		}
	}
}

// prober runs the probe handlers for the health endpoints, caching their
// results for probeCacheTime so that frequent checks stay cheap.
type prober struct {
	probes []*contract.Handler
	sh     *engine.Shared
	log    logr.Logger
	ttl    time.Duration

	mu      sync.Mutex
	at      time.Time
	results map[string]any
	err     error
}

// run returns the probe results, from the cache when they are fresh.
func (p *prober) run(ctx context.Context) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < p.ttl {
		return p.results, p.err
	}
	results := map[string]any{}
	var errs []error
	for _, act := range p.probes {
		c := p.sh.OperatorCall(act, p.log)
		var out any
		err := spec.Protect(c.Log, func() error {
			var perr error
			out, perr = act.Call(ctx, nil, c)
			return perr
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("probe %q: %w", act.Options.ID, err))
			results[act.Options.ID] = map[string]any{"error": err.Error()}
			continue
		}
		results[act.Options.ID] = out
	}
	p.at, p.results, p.err = time.Now(), results, errors.Join(errs...)
	return p.results, p.err
}

// Check is a healthz.Checker: it fails when a probe fails.
func (p *prober) Check(req *http.Request) error {
	_, err := p.run(req.Context())
	return err
}

// ServeHTTP serves the probe results as JSON: 200 when all probes pass,
// 500 otherwise.
func (p *prober) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	results, err := p.run(req.Context())
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_ = json.NewEncoder(w).Encode(results)
}
