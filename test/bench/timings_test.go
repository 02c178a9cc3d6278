//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

func TestPercentilesTakeTheNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(201-i)*time.Millisecond) // 200 ms down to 1 ms
	}
	p := percentiles(ds)
	if p.N != 200 || p.P50 != 100 || p.P99 != 198 || p.Max != 200 {
		t.Errorf("percentiles of 1..200 ms = %+v, want n 200, p50 100, p99 198, max 200", p)
	}
	if one := percentiles([]time.Duration{3 * time.Millisecond}); one.P50 != 3 || one.P99 != 3 {
		t.Errorf("percentiles of one value = %+v, want it everywhere", one)
	}
	if percentiles(nil) != nil {
		t.Error("percentiles of nothing are not nil")
	}
}

func TestLatenessIsTheStartAfterThePreviousEndPlusTheInterval(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(object string, start, end int) calls.Call {
		return calls.Call{At: at(start), End: at(end), Cause: "timer", Object: object}
	}
	runs := []calls.Call{
		run("a", 0, 5),       // before the phase: not a predecessor
		run("a", 1000, 1010), // first in the phase: no lateness of its own
		run("a", 2030, 2031), // due at 2010: 20 ms late
		run("b", 1500, 1500),
		run("b", 2490, 2490),                         // due at 2500: 10 ms early
		{At: at(1200), Cause: "create", Object: "a"}, // no end: not periodic
		run("a", 3100, 3101),                         // after the phase
	}
	got := lateness(runs, time.Second, at(500), at(3000))
	want := map[time.Duration]bool{20 * time.Millisecond: true, -10 * time.Millisecond: true}
	if len(got) != len(want) {
		t.Fatalf("lateness = %v, want 20 ms and -10 ms", got)
	}
	for _, d := range got {
		if !want[d] {
			t.Errorf("lateness = %v, want 20 ms and -10 ms", got)
		}
	}
}

func TestLatenessPairsRunsOfTheSameCauseOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	runs := []calls.Call{
		{At: t0, End: t0, Cause: "timer", Object: "a"},
		{At: t0.Add(3 * time.Second), End: t0.Add(3 * time.Second), Cause: "daemon", Object: "a"},
	}
	if got := lateness(runs, time.Second, t0, time.Time{}); len(got) != 0 {
		t.Errorf("a timer run and a daemon check paired: %v", got)
	}
}

func TestFirstCallDelayRunsFromCreationToTheEarliestCall(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	created := map[string]time.Time{"new-1": t0, "new-2": t0.Add(time.Second)}
	all := []calls.Call{
		{At: t0.Add(50 * time.Millisecond), Cause: "create", Object: "new-1"},
		{At: t0.Add(40 * time.Millisecond), Cause: "create", Object: "new-1"},
		{At: t0.Add(time.Second + 7*time.Millisecond), Cause: "create", Object: "new-2"},
		{At: t0, Cause: "update", Object: "new-2"},
		{At: t0, Cause: "create", Object: "fail-1"},
	}
	p := percentiles(firstCallDelays(all, "create", created))
	if p.N != 2 || p.P50 != 7 || p.Max != 40 {
		t.Errorf("first call delays %+v, want 7 ms and 40 ms", p)
	}
}
