//go:build linux

package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestTheShardedReportComparesEachRunWithTheSingleReplica(t *testing.T) {
	const fixed = 200 // KiB: r1's peak of 1,000 is 800 for the objects
	run := func(name string, n int, cpu float64, rssKiB int64) ShardedRun {
		r := ShardedRun{Name: name, Replicas: n, Objects: 10, NoCall: map[string]int{},
			Phases: []ShardedPhase{{Name: PhaseCreate, Writes: 30, LabelWrites: 10}, {Name: PhaseUpdate, Writes: 10}, {Name: PhaseDelete, Writes: 10}}}
		for range n {
			r.Processes = append(r.Processes, ReplicaResult{Name: "shard", CPUSeconds: cpu, PeakRSSKiB: rssKiB, StartRSSKiB: fixed})
			r.CPUSeconds += cpu
		}
		return r
	}
	// Each of 2 replicas may use 800/2 + 200, each of 4 800/4 + 200.
	s := &ShardedResult{Options: Sharded{}.withDefaults(), Runs: []ShardedRun{
		run("r1", 1, 10, 1000), run("r2", 2, 5, 600), run("r4", 4, 2.5, 401), run(runChurn, 2, 5, 500), run(runRoll, 4, 2.5, 250), run(runChaos, 2, 5, 500)}}
	s.Runs[3].MovedObjects = 3
	s.evaluate()
	failed := map[string]bool{}
	for _, x := range s.Targets {
		if !x.Pass {
			failed[x.Run+": "+x.Metric] = true
		}
	}
	want := map[string]bool{"r4: peak RSS, highest replica (MiB)": true}
	for k := range want {
		if !failed[k] {
			t.Errorf("target %q passed, want a miss", k)
		}
	}
	if len(failed) != len(want) {
		t.Errorf("missed %v, want only %v", failed, want)
	}
	md := s.markdown()
	for _, name := range []string{"r1", "r2", "r4", runChurn, runRoll, runChaos} {
		if !strings.Contains(md, "| "+name+" |") {
			t.Errorf("the report has no line for run %s", name)
		}
	}
}

func TestTheShardedReportHoldsTheFixedCostTo25MiB(t *testing.T) {
	for _, tc := range []struct {
		startKiB int64
		pass     bool
	}{{25 * 1024, true}, {25*1024 + 1, false}} {
		s := &ShardedResult{Options: Sharded{}.withDefaults(), Runs: []ShardedRun{{Name: "r1", Replicas: 1, Objects: 10,
			Processes: []ReplicaResult{{Name: "shard-1", PeakRSSKiB: 90 * 1024, StartRSSKiB: tc.startKiB, StartAnonKiB: 8 * 1024, StartFileKiB: 17 * 1024}}}}}
		s.evaluate()
		i := slices.IndexFunc(s.Targets, func(x ShardedTarget) bool { return strings.HasPrefix(x.Metric, "fixed cost") })
		if i < 0 {
			t.Fatalf("no fixed cost target in %+v", s.Targets)
		}
		if got := s.Targets[i]; got.Pass != tc.pass || !strings.Contains(got.Figure, "(8.0 + 17.0)") {
			t.Errorf("RSS before objects %d KiB: %+v, want pass %v and the split 8.0 + 17.0", tc.startKiB, got, tc.pass)
		}
	}
}
