//go:build linux

package bench

import (
	"strings"
	"testing"
)

func TestCreateLatencyWithoutTheWebhookMayExceedTheWebhooksByOneSecond(t *testing.T) {
	lat := func(n int, webhook bool, p50, p99 float64) ShardedLatency {
		return ShardedLatency{Replicas: n, Webhook: webhook, Objects: 10, Rate: 5, Create: &Percentiles{N: 10, P50: p50, P99: p99, Max: p99}}
	}
	s := &ShardedResult{Options: Sharded{}.withDefaults(), Latency: []ShardedLatency{
		lat(1, true, 200, 900), lat(1, false, 1200, 1900), // just within
		lat(4, true, 200, 900), lat(4, false, 300, 1901), // p99 beyond
	}}
	s.evaluate()
	result := map[string]bool{}
	for _, x := range s.Targets {
		result[x.Run+": "+x.Metric] = x.Pass
	}
	want := map[string]bool{
		"lat1: create handler after (ms), p50 without webhook": true,
		"lat1: create handler after (ms), p99 without webhook": true,
		"lat4: create handler after (ms), p50 without webhook": true,
		"lat4: create handler after (ms), p99 without webhook": false,
	}
	for k, pass := range want {
		if got, ok := result[k]; !ok || got != pass {
			t.Errorf("target %q: pass %v (there: %v), want %v", k, got, ok, pass)
		}
	}
	md := s.markdown()
	for _, name := range []string{"lat1-webhook", "lat1-assigner", "lat4-webhook", "lat4-assigner"} {
		if !strings.Contains(md, "| "+name+" |") {
			t.Errorf("the report has no line for latency run %s", name)
		}
	}
}
