package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheCheckedInDashboardAndAlertsAreWhatTheMetricDefinitionsGive(t *testing.T) {
	files, err := generate("../../internal/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Fatalf("%v (run make grafana)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is not what the metric definitions give: run make grafana", name)
		}
	}
}

func TestEveryMetricHasAPanelThatQueriesIt(t *testing.T) {
	metrics, err := readMetrics("../../internal/metrics")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range metrics {
		names[m.Name] = true
	}
	for _, want := range []string{
		"gopf_handler_calls_total", "gopf_handler_duration_seconds", "gopf_causes_total",
		"gopf_daemons_running", "gopf_timer_lateness_seconds", "gopf_peering_paused",
	} {
		if !names[want] {
			t.Errorf("metric %s was not found in internal/metrics/", want)
		}
	}
	var dashboard struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(mustGenerate(t)[dashboardFile], &dashboard); err != nil {
		t.Fatal(err)
	}
	if len(dashboard.Panels) != len(metrics) {
		t.Fatalf("%d panels for %d metrics", len(dashboard.Panels), len(metrics))
	}
	for i, m := range metrics {
		for _, target := range dashboard.Panels[i].Targets {
			if err := checkExpr(target.Expr, map[string]metric{m.Name: m}); err != nil || !strings.Contains(target.Expr, m.Name) {
				t.Errorf("panel %d (%s): %q: %v", i, m.Name, target.Expr, err)
			}
		}
	}
}

func TestARenamedMetricFailsTheAlertsThatUseIt(t *testing.T) {
	src, err := os.ReadFile("../../internal/metrics/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	renamed := strings.ReplaceAll(string(src), `"gopf_handler_calls_total"`, `"gopf_handler_invocations_total"`)
	if renamed == string(src) {
		t.Fatal("internal/metrics/metrics.go no longer defines gopf_handler_calls_total: update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.go"), []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = generate(dir)
	if err == nil || !strings.Contains(err.Error(), "no metric gopf_handler_calls_total is defined") {
		t.Errorf("got %v, want the alert on the old name reported", err)
	}
}

func TestALabelNoMetricHasIsReported(t *testing.T) {
	byName := map[string]metric{"gopf_x_total": {Name: "gopf_x_total", Type: "counter", Labels: []string{"controller"}}}
	if err := checkExpr(`sum by (controller) (rate(gopf_x_total{outcome="retry"}[5m]))`, byName); err == nil || !strings.Contains(err.Error(), `"outcome"`) {
		t.Errorf("got %v, want the unknown label outcome reported", err)
	}
	if err := checkExpr(`sum by (namespace, controller) (rate(gopf_x_total[5m]))`, byName); err != nil {
		t.Errorf("scrape and metric labels: %v", err)
	}
}

func mustGenerate(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := generate("../../internal/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return files
}
