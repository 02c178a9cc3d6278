//go:build linux

package sharder

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// report logs the run's figures as Markdown, for docs/sharding.md: each
// phase's time, handler calls and label changes and the spread at its
// end, the calls of each replica, and the verdict.
func (run *run) report(v Verdict, cs []calls.Call) {
	h := run.rec.histories()
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d objects; replicas: %s; load average at the end: %s\n\n", len(run.names), strings.Join(run.replicaNames(v), ", "), loadAverage())
	b.WriteString("| phase | seconds | ends at (s) | handler calls | label changes | moves | objects per shard at its end |\n|---|---|---|---|---|---|---|\n")
	for _, m := range run.marks {
		changes, moves := h.Changes(m.from, m.to)
		n := 0
		for _, c := range cs {
			if !c.At.Before(m.from) && c.At.Before(m.to) {
				n++
			}
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %d | %d | %d | %s |\n", m.name, m.to.Sub(m.from).Seconds(), m.to.Sub(run.start).Seconds(),
			n, changes, moves, spread(h.ShardsAt(m.to)))
	}
	b.WriteString("\n| replica | create | update | delete |\n|---|---|---|---|\n")
	for _, name := range run.replicaNames(v) {
		p := v.PerReplica[name]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", name, p["create"], p["update"], p["delete"])
	}
	fmt.Fprintf(&b, "\ncalls: %d create, %d update, %d delete; %s\n", v.Calls["create"], v.Calls["update"], v.Calls["delete"], v.Summary())
	if started, failed, conflicts, err := run.s.resyncs(); err == nil {
		fmt.Fprintf(&b, "sharder: %d resyncs, %d ended in errors, with %d drains or moves that conflicted with another write\n", started, failed, conflicts)
	}
	b.WriteString("\n")
	b.WriteString(strings.Join(run.events, "\n"))
	run.t.Log(b.String())
}

// replicaNames returns the names of the replicas that were started, in
// order, and of any other that made calls.
func (run *run) replicaNames(v Verdict) []string {
	var out []string
	for i := 1; i <= run.r.next; i++ {
		out = append(out, fmt.Sprintf("shard-%d", i))
	}
	for _, name := range sortedKeys(v.PerReplica) {
		if !strings.HasPrefix(name, "shard-") {
			out = append(out, name)
		}
	}
	return out
}

// spread formats objects per shard, "-" for unlabelled ones.
func spread(per map[string]int) string {
	var parts []string
	for _, shard := range sortedKeys(per) {
		name := shard
		if name == "" {
			name = "-"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, per[shard]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// loadAverage returns the machine's load averages over 1, 5 and 15
// minutes, for the reader of the timings; "?" if unknown.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(data)); err == nil && len(fields) >= 3 {
		return strings.Join(fields[:3], " ")
	}
	return "?"
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
