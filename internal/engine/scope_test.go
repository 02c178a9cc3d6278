package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestNamespacePatternsAreDecidedAsKopfDecidesThem(t *testing.T) {
	cases := []struct {
		patterns []string
		in, out  []string
	}{
		{[]string{"app-*,!app-pr-*"}, []string{"app-live", "app-x"}, []string{"app-pr-1", "other"}},
		{[]string{"!kube-*"}, []string{"default", "app"}, []string{"kube-system"}},
		{[]string{"a", "b"}, []string{"a", "b"}, []string{"c"}},
		// Kopf's own examples: the first glob decides what is in play.
		{[]string{"myapp-*, !*-pr-*, *pr-123"}, []string{"myapp-test", "myapp-pr-123"}, []string{"myapp-pr-456", "otherapp-pr-123"}},
		{[]string{"!*-pr-*, *pr-123"}, []string{"myapp-test", "otherapp-pr-123", "anyapp-anything"}, []string{"myapp-pr-456"}},
		// Several patterns are or-ed: the second alone means "all but app-pr-*".
		{[]string{"app-*", "!app-pr-*"}, []string{"app-x", "other", "app-pr-1"}, nil},
		// Within one pattern, a later plain name brings back only what the
		// first one matched.
		{[]string{"a,b"}, []string{"a"}, []string{"b"}},
		{[]string{"team-?,!team-x,team-x"}, []string{"team-x", "team-a"}, []string{"team-ab"}},
		{nil, []string{"anything"}, nil},
	}
	for _, tc := range cases {
		s, err := newScope(tc.patterns)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range tc.in {
			if !s.includes(ns) {
				t.Errorf("%q: %q should be in scope", tc.patterns, ns)
			}
		}
		for _, ns := range tc.out {
			if s.includes(ns) {
				t.Errorf("%q: %q should be out of scope", tc.patterns, ns)
			}
		}
		if !s.includes("") {
			t.Errorf("%q: cluster-scoped objects are always in scope", tc.patterns)
		}
	}
	if _, err := newScope([]string{"bad["}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

func TestCacheNamespacesOnlyForPlainNames(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a,b"}, []string{"a"}}, // b is never in scope
		{[]string{"a", "a"}, []string{"a"}},
		{[]string{"a,b*"}, nil},
		{[]string{"!a"}, nil},
		{[]string{""}, nil},
	} {
		got, err := CacheNamespaces(tc.patterns)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CacheNamespaces(%q) = %q, %v; want %q", tc.patterns, got, err, tc.want)
		}
	}
}

func TestProbeResultsAreJSONAndCached(t *testing.T) {
	calls := 0
	reg := handlers.NewRegistry()
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		calls++
		return map[string]any{"calls": calls}, nil
	}, handlers.ID("counter"))
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return nil, errors.New("database unreachable")
	}, handlers.ID("db"))
	p := &prober{probes: contract.SetOf(reg).Handlers(spec.KindProbe), sh: &shared{set: contract.SetOf(reg)}, log: logr.Discard(), ttl: time.Hour}

	for i := 0; i < 2; i++ {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest("GET", "/probes", nil))
		if rec.Code != 500 {
			t.Errorf("status %d with a failing probe, want 500", rec.Code)
		}
		var body map[string]map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if body["counter"]["calls"] != 1.0 || body["db"]["error"] != "database unreachable" {
			t.Errorf("body = %v", body)
		}
	}
	if err := p.Check(httptest.NewRequest("GET", "/healthz", nil)); err == nil {
		t.Error("the health check passed with a failing probe")
	}
	if calls != 1 {
		t.Errorf("the probe ran %d times within its cache time, want 1", calls)
	}
}
