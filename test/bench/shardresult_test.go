//go:build linux

package bench

import (
	"strings"
	"testing"
)

func TestTheShardedReportComparesEachRunWithTheSingleReplica(t *testing.T) {
	run := func(name string, n int, cpu float64, rssKiB int64) ShardedRun {
		r := ShardedRun{Name: name, Replicas: n, Objects: 10, NoCall: map[string]int{},
			Phases: []ShardedPhase{{Name: PhaseCreate, Writes: 30, LabelWrites: 10}, {Name: PhaseUpdate, Writes: 10}, {Name: PhaseDelete, Writes: 10}}}
		for range n {
			r.Processes = append(r.Processes, ReplicaResult{Name: "shard", CPUSeconds: cpu, PeakRSSKiB: rssKiB})
			r.CPUSeconds += cpu
		}
		return r
	}
	s := &ShardedResult{Options: Sharded{}.withDefaults(), Runs: []ShardedRun{
		run("r1", 1, 10, 1000), run("r2", 2, 5, 500), run("r4", 4, 2.5, 600), run(runChurn, 2, 5, 500), run(runRoll, 4, 2.5, 250), run(runChaos, 2, 5, 500)}}
	s.Runs[3].MovedObjects = 3
	s.evaluate()
	failed := map[string]bool{}
	for _, x := range s.Targets {
		if !x.Pass {
			failed[x.Run+": "+x.Metric] = true
		}
	}
	want := map[string]bool{"r4: peak RSS, highest replica / 1 replica's": true}
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
