//go:build linux

package bench

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// createBeforeStart creates every object of a WorkloadPeriodic run before
// its operator starts, which then finds them all on its start, as an
// operator deployed to a cluster does: the API server does not serve the
// load generator's creates and the operator's first writes at once, and
// the create phase, which has no targets, takes less time.
func (r *run) createBeforeStart(ctx context.Context, load *loadGenerator) error {
	r.b.report.status("%s creating %d objects before the operator starts", r.label, len(load.names))
	start := time.Now()
	if err := load.createAll(ctx); err != nil {
		return fmt.Errorf("creating the objects before the operator starts: %w", err)
	}
	r.b.log("%s: %d objects created in %.2f s before the operator starts", r.label, len(load.names), time.Since(start).Seconds())
	return nil
}

// runPeriodic runs the phases of WorkloadPeriodic on the objects created
// before the operator started (createBeforeStart). Create: from when the
// operator, running timers, watches them (it has listed them all) until it
// has stored each one's check's result once. Timer-start: a new process,
// running timers, has run each object's once. Timer: the objects are left
// to their timers for Scenario.Ticking. Daemon-start and daemon: the same
// with a process running daemons. Delete ends it. Starting a fresh process
// for each ticking phase makes its peak RSS that of the periodic work on
// every object, not that of the create phase. The hand-written operator
// requeues itself in both.
func (r *run) runPeriodic(ctx context.Context, load *loadGenerator) error {
	names := r.track.names
	checked := func(o client.Object) bool {
		kex, ok := o.(*kopfv1.KopfExample)
		return ok && scenario.Checked(kex)
	}
	if err := r.phase(ctx, PhaseCreate, nil, r.track.expect(names, checked), ""); err != nil {
		return err
	}
	for _, p := range []struct{ periodic, start, ticking string }{
		{scenario.PeriodicTimer, PhaseTimerStart, PhaseTimer},
		{scenario.PeriodicDaemon, PhaseDaemonStart, PhaseDaemon},
	} {
		r.periodic = p.periodic
		if err := r.respawn(p.start, p.periodic, false); err != nil {
			return err
		}
		doneAt, err := r.await(ctx, p.start, nil, r.callsSince(r.proc.started, names, 1))
		if err != nil {
			return err
		}
		r.handled[p.start] = doneAt.Sub(r.proc.started)
		r.b.log("%s: %s: every object ran %.2f s after the new process started", r.label, p.start, r.handled[p.start].Seconds())
		if err := r.mark(p.ticking); err != nil {
			return err
		}
		if err := r.tick(ctx, p.ticking); err != nil {
			return err
		}
	}
	return r.phase(ctx, PhaseDelete, load.deleteAll, r.track.expect(names, gone), PhaseShutdown)
}

// isTicking reports whether phase is one where the objects are left to
// their periodic work, whose lateness is measured.
func isTicking(phase string) bool { return phase == PhaseTimer || phase == PhaseDaemon }

// tick leaves the objects to their periodic work for Scenario.Ticking, in
// the phase named. When profiling, the operator writes its heap profile
// halfway through, with every object's timer or daemon running.
func (r *run) tick(ctx context.Context, phase string) error {
	if r.proc.prof.heap == "" {
		return r.pause(ctx, phase, r.sc.Ticking)
	}
	start := time.Now()
	if err := r.pause(ctx, phase, r.sc.Ticking/2); err != nil {
		return err
	}
	if err := r.proc.profile(syscall.SIGUSR2, r.proc.prof.heap); err != nil {
		return err
	}
	return r.pause(ctx, phase, r.sc.Ticking-time.Since(start))
}
