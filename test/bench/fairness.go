//go:build linux

package bench

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// fairnessNames returns the names of the objects of a fairness run of n:
// those that arrive alone, those that fail, and those that arrive while
// the failing ones retry.
func fairnessNames(n int) (arrive, failing, late []string) {
	return namesWith("new", n), namesWith("fail", n), namesWith("late", n)
}

// runFairness runs the phases of WorkloadFairness: arrive, fail, retry,
// arrive-retrying and delete (see the Phase constants). The first handler
// call of each object that arrives is timed from the answer to its create
// request.
func (r *run) runFairness(ctx context.Context, load *loadGenerator) error {
	arrive, failing, late := fairnessNames(r.sc.Objects)
	n := r.sc.Handlers
	created := func(o client.Object) bool { return o != nil && scenario.Handled(o, n, false) }
	arrival := func(names []string) func(context.Context) error {
		return func(ctx context.Context) error {
			return load.of(names, nil).arrive(ctx, arrivalRate, r.noteCreated)
		}
	}
	r.arrivals[PhaseArrive], r.arrivals[PhaseArriveRetrying] = arrive, late
	for _, phase := range []string{PhaseArrive, PhaseFail, PhaseArriveRetrying} {
		r.objects[phase] = r.sc.Objects
	}
	if err := r.phase(ctx, PhaseArrive, arrival(arrive), r.track.expect(arrive, created), ""); err != nil {
		return err
	}
	// Two attempts each: the failing objects are retrying.
	fail := load.of(failing, map[string]string{scenario.FailLabel: "true"})
	if err := r.phase(ctx, PhaseFail, fail.createAll, r.callsSince(time.Now(), failing, 2), PhaseRetry); err != nil {
		return err
	}
	if err := r.pause(ctx, PhaseRetry, 2*r.sc.RetryDelay); err != nil {
		return err
	}
	if err := r.phase(ctx, PhaseArriveRetrying, arrival(late), r.track.expect(late, created), ""); err != nil {
		return err
	}
	return r.phase(ctx, PhaseDelete, load.deleteAll, r.track.expect(r.track.names, gone), PhaseShutdown)
}

// noteCreated records when the API server answered the create request of
// the object named.
func (r *run) noteCreated(name string, at time.Time) {
	r.createdMu.Lock()
	defer r.createdMu.Unlock()
	r.created[name] = at
}
