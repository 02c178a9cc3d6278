package spawn

import (
	"testing"
	"time"
)

func TestWaitDoneReportsWhetherDoneClosedInTime(t *testing.T) {
	open, closed := make(chan struct{}), make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name string
		done chan struct{}
		d    time.Duration
		want bool
	}{
		{"closed, without waiting", closed, 0, true},
		{"open, without waiting", open, 0, false},
		{"closed, waiting", closed, time.Hour, true},
		{"open until the time is over", open, time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitDone(tc.done, tc.d); got != tc.want {
				t.Errorf("waitDone = %v, want %v", got, tc.want)
			}
			if got := sleepUnlessStopped(tc.d, tc.done); got == tc.want {
				t.Errorf("sleepUnlessStopped = %v, want %v: it slept through exactly when nothing stopped it", got, !tc.want)
			}
		})
	}
}
