package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/policy"
	"github.com/gopf-dev/gopf/internal/spec"
)

// activities runs the operator-level handlers: startup handlers when the
// manager starts (the gate opens only once they succeed; a permanent
// failure stops the manager with the error), cleanup handlers when it
// stops gracefully. It is a Runnable on the manager.
type activities struct {
	sh      *shared
	startup []*contract.Handler
	cleanup []*contract.Handler
	opts    Options
	log     logr.Logger
}

// Start runs the startup handlers, waits for the manager to stop, then runs
// the cleanup handlers.
func (a *activities) Start(ctx context.Context) error {
	a.sh.setContext(ctx)
	for _, act := range a.startup {
		if err := a.run(ctx, act); err != nil {
			return fmt.Errorf("gopf: %s failed, so the operator stops: %w", act, err)
		}
	}
	a.sh.gate.setStarted()
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
		c := a.sh.operatorCall(act, a.log.WithValues("activity", act.Kind.String(), "retry", attempt-1))
		c.Retry, c.Started, c.Runtime = attempt-1, started, time.Since(started)
		err := spec.Protect(c.Log, func() error { _, err := act.Call(ctx, nil, c); return err })
		v := policy.Judge(act.Options, a.opts.DefaultBackoff, err, attempt, started, time.Now())
		handlerCalls.WithLabelValues("operator", act.Options.ID, v.Outcome.String()).Inc()
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
	sh     *shared
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
		c := p.sh.operatorCall(act, p.log)
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

// scope decides which namespaces the operator handles, as Kopf decides it,
// from patterns such as "app-*,!app-pr-*". Each pattern is a
// comma-separated list of globs (* and ?; a leading ! negates) read left to
// right: the first glob decides which namespaces are in play (a pattern
// that starts with a negation starts from "*"); a later negation drops the
// namespaces it matches, and a later plain glob brings back only those the
// first glob matched. A namespace is handled if any pattern accepts it.
// Namespaces that appear later are handled without a restart.
// Cluster-scoped objects are always in scope.
type scope struct {
	patterns [][]string // the globs of each pattern, the first one plain
}

// newScope parses the patterns (each may hold a comma-separated list).
func newScope(patterns []string) (*scope, error) {
	var out [][]string
	for _, p := range patterns {
		var globs []string
		for _, part := range strings.Split(p, ",") {
			part = strings.TrimSpace(part)
			if part == "" || part == "!" {
				continue
			}
			if _, err := path.Match(strings.TrimPrefix(part, "!"), ""); err != nil {
				return nil, fmt.Errorf("namespace pattern %q: %w", part, err)
			}
			globs = append(globs, part)
		}
		if len(globs) == 0 {
			continue
		}
		if strings.HasPrefix(globs[0], "!") {
			globs = append([]string{"*"}, globs...)
		}
		out = append(out, globs)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &scope{patterns: out}, nil
}

// includes reports whether objects of namespace ns are handled.
func (s *scope) includes(ns string) bool {
	if s == nil || ns == "" {
		return true
	}
	for _, globs := range s.patterns {
		if matchPattern(globs, ns) {
			return true
		}
	}
	return false
}

// matchPattern applies the globs of one pattern to ns, as Kopf does.
func matchPattern(globs []string, ns string) bool {
	first, _ := path.Match(globs[0], ns)
	in := first
	for _, g := range globs[1:] {
		if negated, ok := strings.CutPrefix(g, "!"); ok {
			if m, _ := path.Match(negated, ns); m {
				in = false
			}
		} else if m, _ := path.Match(g, ns); m && first {
			in = true
		}
	}
	return in
}

// literal returns the namespaces in scope if every glob is a plain
// namespace name, so that a namespaced cache can serve the scope; nil
// otherwise. Only the first name of a pattern counts: a later plain name
// brings back only what the first one matched.
func (s *scope) literal() []string {
	if s == nil {
		return nil
	}
	var names []string
	for _, globs := range s.patterns {
		for _, g := range globs {
			// A backslash escapes in a glob: `a\b` handles "ab", not "a\b".
			if strings.ContainsAny(g, `*?[!\`) {
				return nil
			}
		}
		if !slices.Contains(names, globs[0]) {
			names = append(names, globs[0])
		}
	}
	return names
}

// CacheNamespaces returns the namespaces a manager's cache should be limited
// to for the namespace patterns of Options.Namespaces: the names themselves
// when they are all plain names, or nil (watch the whole cluster and filter)
// when there are globs or negations, so that namespaces created later are
// picked up without a restart.
func CacheNamespaces(patterns []string) ([]string, error) {
	s, err := newScope(patterns)
	if err != nil {
		return nil, err
	}
	return s.literal(), nil
}
