//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// callsPoll is how often a callsWaiter reads the operator's calls.
const callsPoll = 250 * time.Millisecond

// callsWaiter waits until each of some objects has had a number of handler
// calls, of any cause, that began at or after a time, by reading the
// operator's calls file (package calls). It is a waiter for what the
// objects themselves do not show: a failing handler, a periodic run.
type callsWaiter struct {
	path  string
	since time.Time
	names map[string]bool
	n     int

	mu   sync.Mutex
	done int
}

// callsSince returns a waiter for n calls on each of names since since.
func (r *run) callsSince(since time.Time, names []string, n int) waiter {
	w := &callsWaiter{path: r.calls, since: since, names: map[string]bool{}, n: n}
	for _, name := range names {
		w.names[name] = true
	}
	return w
}

func (w *callsWaiter) wait(ctx context.Context) (time.Time, error) {
	tick := time.NewTicker(callsPoll)
	defer tick.Stop()
	for {
		all, err := calls.Read(w.path)
		if err != nil {
			return time.Time{}, err
		}
		now := time.Now()
		if w.count(all) == len(w.names) {
			return now, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			done, of := w.progress()
			return time.Time{}, fmt.Errorf("%d of %d objects had %d handler calls: %w", done, of, w.n, ctx.Err())
		}
	}
}

// count notes and returns how many of the objects had their calls.
func (w *callsWaiter) count(all []calls.Call) int {
	per := map[string]int{}
	done := 0
	for _, c := range all {
		if w.names[c.Object] && !c.At.Before(w.since) {
			if per[c.Object]++; per[c.Object] == w.n {
				done++
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = done
	return done
}

func (w *callsWaiter) progress() (done, of int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done, len(w.names)
}
