//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// ShardedLatency is one latency run of the sharded scenario: how long new
// objects wait for their create handler when they get their shard at
// admission (gopf's webhook) and when the elected assigner gives it to
// them as they appear.
type ShardedLatency struct {
	// Replicas is how many replicas the run had.
	Replicas int `json:"replicas"`
	// Webhook is whether the run's first replica served gopf's webhooks.
	Webhook bool `json:"webhook"`
	// Objects were created one after the other at Rate a second.
	Objects int     `json:"objects"`
	Rate    float64 `json:"rate"`
	// Create is, over the objects, the time from the API server's answer
	// to an object's create to the first call of its create handler.
	Create *Percentiles `json:"create"`
}

// latencyTolerance is how much later, at p50 and at p99, a create handler
// may be called without gopf's webhook than with it (issue 41).
const latencyTolerance = time.Second

// latencyRuns runs a latency run with and without gopf's webhook for each
// of s.LatencyReplicas.
func (b *bench) latencyRuns(ctx context.Context, s Sharded) ([]ShardedLatency, error) {
	var out []ShardedLatency
	for _, n := range s.LatencyReplicas {
		for _, webhook := range []bool{true, false} {
			l, err := b.latencyRun(ctx, s, n, webhook)
			if err != nil {
				return nil, err
			}
			out = append(out, *l)
		}
	}
	return out, nil
}

// latencyRun starts n replicas of a ring of its own, the first serving
// gopf's webhooks if webhook is set, creates s.LatencyObjects objects at
// s.LatencyRate a second once they are up, and measures how long each
// waits for its create handler.
func (b *bench) latencyRun(ctx context.Context, s Sharded, n int, webhook bool) (*ShardedLatency, error) {
	name := fmt.Sprintf("lat%d-assigner", n)
	if webhook {
		name = fmt.Sprintf("lat%d-webhook", n)
	}
	id := "sharded-" + name
	kind := scenario.KopfExample
	if err := b.createNamespace(ctx, id); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	names := namesWith("kex", s.LatencyObjects)
	track, err := startTracker(ctx, b.load, b.scheme, kind, id, names)
	if err != nil {
		return nil, err
	}
	r := &shardRun{b: b, s: s, id: id, kind: kind, names: names, track: track, noHooks: !webhook,
		calls: filepath.Join(b.work, id+".calls"), timeout: b.opts.PhaseTimeout, kills: map[string]time.Time{},
		res: ShardedRun{Name: name, Replicas: n, Objects: len(names)}}
	if err := os.Remove(r.calls); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	defer r.stopAll()
	b.log("sharded/%s: starting %d replicas", name, n)
	for range n {
		if err := r.startReplica(ctx); err != nil {
			return nil, err
		}
	}
	load := &loadGenerator{c: b.c, kind: kind, ns: id, names: names, workers: b.opts.Workers}
	var mu sync.Mutex
	created := map[string]time.Time{}
	send := func(ctx context.Context) error {
		return load.arrive(ctx, s.LatencyRate, func(name string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			created[name] = at
		})
	}
	handled := func(o client.Object) bool { return o != nil && scenario.Handled(o, 1, false) }
	if _, err := r.await(ctx, PhaseCreate, send, r.track.expect(names, handled)); err != nil {
		return nil, fmt.Errorf("sharded/%s: %w", name, err)
	}
	r.stopAll()
	cs, err := calls.Read(r.calls)
	if err != nil {
		return nil, err
	}
	l := &ShardedLatency{Replicas: n, Webhook: webhook, Objects: len(names), Rate: s.LatencyRate,
		Create: percentiles(firstCallDelays(cs, causeCreate, created))}
	if l.Create != nil {
		b.log("sharded/%s: create handler after p50 %.0f ms, p99 %.0f ms", name, l.Create.P50, l.Create.P99)
	}
	return l, nil
}

// evaluateLatency checks that, at each replica count, new objects wait
// for their create handler at most latencyTolerance longer, at p50 and at
// p99, without gopf's webhook than with it.
func (s *ShardedResult) evaluateLatency() {
	with := map[int]*Percentiles{}
	for _, l := range s.Latency {
		if l.Webhook {
			with[l.Replicas] = l.Create
		}
	}
	for _, l := range s.Latency {
		base := with[l.Replicas]
		if l.Webhook || base == nil || l.Create == nil {
			continue
		}
		run := fmt.Sprintf("lat%d", l.Replicas)
		tol := ms(latencyTolerance)
		for _, q := range []struct {
			name      string
			got, want float64
		}{{"p50", l.Create.P50, base.P50}, {"p99", l.Create.P99, base.P99}} {
			s.Targets = append(s.Targets, ShardedTarget{Run: run, Metric: "create handler after (ms), " + q.name + " without webhook",
				Figure: f1(q.got), Target: fmt.Sprintf("≤ %s (with webhook) + %.0f", f1(q.want), tol), Pass: q.got <= q.want+tol})
		}
	}
}

// latencyTable has a line per latency run.
func (s *ShardedResult) latencyTable() *table {
	t := &table{header: []string{columnRun, "replicas", "shard label from", "objects", "per second",
		"create handler after p50 (ms)", "p99 (ms)", "max (ms)"}, align: "lrlrrrrr"}
	for _, l := range s.Latency {
		from, run := "the assigner's watch", fmt.Sprintf("lat%d-assigner", l.Replicas)
		if l.Webhook {
			from, run = "the webhook", fmt.Sprintf("lat%d-webhook", l.Replicas)
		}
		p := Percentiles{}
		if l.Create != nil {
			p = *l.Create
		}
		t.add(run, fmt.Sprint(l.Replicas), from, fmt.Sprint(l.Objects), f1(l.Rate), f1(p.P50), f1(p.P99), f1(p.Max))
	}
	return t
}
