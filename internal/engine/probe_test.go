package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

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
