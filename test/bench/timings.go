//go:build linux

package bench

import (
	"math"
	"sort"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// Percentiles summarise a set of durations, in milliseconds.
type Percentiles struct {
	// N is how many durations there were.
	N int `json:"n"`
	// P50, P99 and Max are the median, the 99th percentile (nearest rank:
	// the smallest value at least 99% of the values do not exceed) and the
	// largest.
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

// percentiles summarises ds; nil when there are none.
func percentiles(ds []time.Duration) *Percentiles {
	if len(ds) == 0 {
		return nil
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
		return ms(sorted[max(i, 0)])
	}
	return &Percentiles{N: len(sorted), P50: rank(50), P99: rank(99), Max: ms(sorted[len(sorted)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lateness returns how late each periodic run began that began in [from,
// to) (a zero to: no end) after a run of the same cause on the same object
// that also began there: its start minus the end of that previous run plus
// interval. That is when the run was due for a timer that is not sharp
// (the interval counts from the end of a run), a daemon that sleeps the
// interval after each check, and a reconciler that returns RequeueAfter.
// A run that began early (a reconcile a watch event brought) counts with a
// negative lateness. Runs without an end (calls.Record) are left out.
func lateness(runs []calls.Call, interval time.Duration, from, to time.Time) []time.Duration {
	type stream struct{ cause, object string }
	by := map[stream][]calls.Call{}
	for _, c := range runs {
		if !c.End.IsZero() && within(c.At, from, to) {
			s := stream{c.Cause, c.Object}
			by[s] = append(by[s], c)
		}
	}
	var out []time.Duration
	for _, rs := range by {
		sort.Slice(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
		for i := 1; i < len(rs); i++ {
			out = append(out, rs[i].At.Sub(rs[i-1].End.Add(interval)))
		}
	}
	return out
}

// firstCallDelays returns, for each object created (name → when the API
// server answered its create request), the time until the first handler
// call of cause on it. Objects with no such call are left out.
func firstCallDelays(all []calls.Call, cause string, created map[string]time.Time) []time.Duration {
	first := map[string]time.Time{}
	for _, c := range all {
		if _, ok := created[c.Object]; !ok || c.Cause != cause {
			continue
		}
		if t, seen := first[c.Object]; !seen || c.At.Before(t) {
			first[c.Object] = c.At
		}
	}
	out := make([]time.Duration, 0, len(first))
	for name, at := range first {
		out = append(out, at.Sub(created[name]))
	}
	return out
}

// within reports whether t is in [from, to); a zero to means no end.
func within(t, from, to time.Time) bool {
	return !t.Before(from) && (to.IsZero() || t.Before(to))
}
