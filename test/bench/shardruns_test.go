//go:build linux

package bench

import "testing"

func TestShardedRunsSelectsTheRunsNamedAndRefusesOthers(t *testing.T) {
	s := Sharded{Runs: []string{"r1", "r4"}}.withDefaults()
	if err := s.check(); err != nil {
		t.Fatalf("r1,r4: %v", err)
	}
	for name, want := range map[string]bool{"r1": true, "r2": false, "r4": true, runLatency: false, runChurn: false, runRoll: false, runChaos: false} {
		if s.runs(name) != want {
			t.Errorf("runs(%q) = %v, want %v", name, !want, want)
		}
	}
	if all := (Sharded{}).withDefaults(); !all.runs(runChaos) || !all.runs("r2") || all.check() != nil {
		t.Error("no Runs: want every run")
	}
	for _, bad := range [][]string{{"r3"}, {"r2", "r4"}, {"roll"}} {
		if err := (Sharded{Runs: bad}).withDefaults().check(); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if err := (Sharded{Runs: []string{runChurn, runRoll}}).withDefaults().check(); err != nil {
		t.Errorf("churn,rolling without a scaling run: %v", err)
	}
}
