package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/gopf-dev/gopf/internal/contract"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestNamespacePatternsRightmostMatchWins(t *testing.T) {
	cases := []struct {
		patterns []string
		in, out  []string
	}{
		{[]string{"app-*,!app-pr-*"}, []string{"app-live", "app-x"}, []string{"app-pr-1", "other"}},
		{[]string{"!kube-*"}, []string{"default", "app"}, []string{"kube-system"}},
		{[]string{"a", "b"}, []string{"a", "b"}, []string{"c"}},
		{[]string{"team-?", "!team-x", "team-x"}, []string{"team-x", "team-a"}, []string{"team-ab"}},
		{nil, []string{"anything"}, nil},
	}
	for _, tc := range cases {
		s, err := newScope(tc.patterns)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range tc.in {
			if !s.includes(ns) {
				t.Errorf("%v: %q should be in scope", tc.patterns, ns)
			}
		}
		for _, ns := range tc.out {
			if s.includes(ns) {
				t.Errorf("%v: %q should be out of scope", tc.patterns, ns)
			}
		}
		if !s.includes("") {
			t.Errorf("%v: cluster-scoped objects are always in scope", tc.patterns)
		}
	}
	if _, err := newScope([]string{"bad["}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

func TestCacheNamespacesOnlyForPlainNames(t *testing.T) {
	for patterns, want := range map[string]int{"a,b": 2, "a,b*": 0, "!a": 0, "": 0} {
		got, err := CacheNamespaces([]string{patterns})
		if err != nil || len(got) != want {
			t.Errorf("CacheNamespaces(%q) = %v, %v; want %d names", patterns, got, err, want)
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
