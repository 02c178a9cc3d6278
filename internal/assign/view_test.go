package assign

import (
	"testing"
	"time"
)

func TestASnapshotHoldsUntilALeaseOrAStateChanges(t *testing.T) {
	from := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	expiring := &snapshot{gen: 3, from: from, until: from.Add(10 * time.Second)}
	forever := &snapshot{gen: 3, from: from}
	for _, tc := range []struct {
		what string
		s    *snapshot
		gen  uint64
		now  time.Time
		want bool
	}{
		{"same generation, at its time", expiring, 3, from, true},
		{"same generation, before a state changes", expiring, 3, from.Add(10*time.Second - time.Nanosecond), true},
		{"same generation, when a state changes", expiring, 3, from.Add(10 * time.Second), false},
		{"a Lease changed", expiring, 4, from, false},
		{"earlier than it was taken", expiring, 3, from.Add(-time.Second), false},
		{"no state changes with time, an hour later", forever, 3, from.Add(time.Hour), true},
	} {
		if got := tc.s.holds(tc.gen, tc.now); got != tc.want {
			t.Errorf("%s: holds %v, want %v", tc.what, got, tc.want)
		}
	}
}
