//go:build linux

package sharder

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/test/bench"
)

// run is the test's sequence of phases on one ring.
type run struct {
	t      *testing.T
	r      *ring
	rec    *recorder
	s      *sharder
	names  []string
	load   *bench.Load
	start  time.Time
	marks  []mark
	events []string // what was done to the replicas, and when
	// changed is when the ring's members last changed.
	changed time.Time
}

// mark is one phase: from when it began to when its goal was reached.
type mark struct {
	name     string
	from, to time.Time
}

// phases runs the phases in order and stops at the first that fails.
func (run *run) phases(ctx context.Context) {
	run.start = time.Now()
	steps := []struct {
		name string
		fn   func(context.Context) (time.Time, error)
	}{
		{"startup", run.startup},
		{"create", run.send(run.load.CreateAll, func(v Version) bool { return v.Created })},
		{"join", run.join},
		{"update", run.update},
		{"settle", run.settle},
		{"delete", run.send(run.load.DeleteAll, func(v Version) bool { return v.Gone })},
	}
	for _, s := range steps {
		from := time.Now()
		to, err := s.fn(ctx)
		if err != nil {
			run.t.Errorf("%s phase: %v", s.name, err)
			return
		}
		run.marks = append(run.marks, mark{name: s.name, from: from, to: to})
	}
}

// event notes what was done to the replicas, with the time since the start.
func (run *run) event(format string, args ...any) {
	run.events = append(run.events, fmt.Sprintf("%6.1f s  ", time.Since(run.start).Seconds())+fmt.Sprintf(format, args...))
}

// startup starts two replicas and waits for the sharder's webhook to label
// new objects for them.
func (run *run) startup(ctx context.Context) (time.Time, error) {
	for range 2 {
		rep, err := run.r.start(ctx)
		if err != nil {
			return time.Time{}, err
		}
		run.event("%s up", rep.name)
	}
	err := run.r.awaitWebhook(ctx)
	return time.Now(), err
}

// send returns a phase that sends requests and waits until every object
// has been seen as goal wants it.
func (run *run) send(requests func(context.Context) error, goal func(Version) bool) func(context.Context) (time.Time, error) {
	return func(ctx context.Context) (time.Time, error) {
		if err := requests(ctx); err != nil {
			return time.Time{}, err
		}
		return run.rec.await(ctx, run.names, goal, phaseTimeout)
	}
}

// join starts one more replica and waits until the sharder has moved
// objects to it (see settle).
func (run *run) join(ctx context.Context) (time.Time, error) {
	run.changed = time.Now()
	rep, err := run.r.start(ctx)
	if err != nil {
		return time.Time{}, err
	}
	run.event("%s up", rep.name)
	return run.settle(ctx)
}

// update updates the objects in parts while the replicas are replaced one
// by one (a rolling restart: the new one up before the old one stops) and
// then one more stops (a scale-down): each part's updates are sent as a
// replica is told to stop, so that it stops while they are handled.
func (run *run) update(ctx context.Context) (time.Time, error) {
	var steps []func(context.Context, func())
	for range len(run.r.live) {
		steps = append(steps, run.replace)
	}
	steps = append(steps, run.scaleDown)
	first := 0
	for i, part := range split(run.names, len(steps)) {
		from := first + 1
		first += len(part)
		sent := make(chan error, 1)
		var once sync.Once
		send := func() {
			once.Do(func() {
				run.event("sending updates %d-%d", from, from+len(part)-1)
				go func() { sent <- run.load.Of(part).UpdateAll(ctx) }()
			})
		}
		steps[i](ctx, send)
		send() // if the step failed before sending
		if err := <-sent; err != nil {
			return time.Time{}, err
		}
	}
	return run.rec.await(ctx, run.names, func(v Version) bool { return v.Updated }, phaseTimeout)
}

// replace starts a new replica and then, with updates sent, stops the
// oldest one.
func (run *run) replace(ctx context.Context, send func()) {
	old := run.r.live[0]
	rep, err := run.r.start(ctx)
	if err != nil {
		run.t.Errorf("rolling restart: %v", err)
		return
	}
	run.event("%s up", rep.name)
	send()
	run.changed = time.Now()
	run.stopReplica(old)
	run.event("%s stopped", old.name)
}

// stopReplica stops rep, failing the test if it does not stop cleanly.
func (run *run) stopReplica(rep *replica) {
	if err := run.r.stop(rep); err != nil {
		run.t.Error(err)
	}
}

// scaleDown stops the oldest replica, with updates sent.
func (run *run) scaleDown(_ context.Context, send func()) {
	old := run.r.live[0]
	send()
	run.changed = time.Now()
	run.stopReplica(old)
	run.event("%s stopped (scale-down)", old.name)
}

// settle waits until the sharder has finished a resync that began after
// the ring's members last changed, and every object is on a live replica,
// none draining.
func (run *run) settle(ctx context.Context) (time.Time, error) {
	err := poll(ctx, settleTimeout, "the sharder's resync and every object on a live replica, none draining", func() (bool, error) {
		if ok, err := run.s.resynced(run.changed); !ok || err != nil {
			return false, err
		}
		return run.r.settled(ctx)
	})
	return time.Now(), err
}

// split cuts names into n parts of nearly equal sizes.
func split(names []string, n int) [][]string {
	var out [][]string
	for i := range n {
		out = append(out, names[i*len(names)/n:(i+1)*len(names)/n])
	}
	return out
}
