package operator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
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
	p := &prober{probes: contract.SetOf(reg).Handlers(spec.KindProbe), sh: &engine.Shared{Set: contract.SetOf(reg)}, log: logr.Discard(), ttl: time.Hour}

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

func TestProbesGetTheOperatorsMemoAndIndexes(t *testing.T) {
	reg := handlers.NewRegistry()
	pods := handlers.OnFlatIndex(reg, "pods", func(pod *corev1.Pod, _ *handlers.Cause) string { return pod.Name })
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return map[string]any{"region": c.Memo.Get("region"), "pods": pods.Get(c.Indexes, nil)}, nil
	}, handlers.ID("view"))
	set := contract.SetOf(reg)
	op := set.OperatorOf(t.Name())
	op.Memo.Set("region", "eu-1")
	spec.SetEntries(spec.AddIndex(op.Indexes, "pods"), "ns/a", map[any]any{nil: "a"})
	p := &prober{probes: set.Handlers(spec.KindProbe), sh: &engine.Shared{Set: set, Memo: op.Memo, Indexes: op.Indexes}, log: logr.Discard(), ttl: 1}
	results, err := p.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	view, _ := results["view"].(map[string]any)
	if view["region"] != "eu-1" || len(view["pods"].([]string)) != 1 {
		t.Errorf("the probe saw %v; want the operator memo's region and the flat index's one value", results)
	}
}
