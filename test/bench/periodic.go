//go:build linux

package bench

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// runPeriodic runs the phases of WorkloadPeriodic. Create: the operator,
// running timers, sees every object and stores its check's result once.
// Timer-start: a new process, running timers, has run each object's once.
// Timer: the objects are left to their timers for Scenario.Ticking.
// Daemon-start and daemon: the same with a process running daemons. Delete
// ends it. Starting a fresh process for each ticking phase makes its peak
// RSS that of the periodic work on every object, not that of the create
// phase. The hand-written operator requeues itself in both.
func (r *run) runPeriodic(ctx context.Context, load *loadGenerator) error {
	names := r.track.names
	checked := func(o client.Object) bool {
		kex, ok := o.(*kopfv1.KopfExample)
		return ok && scenario.Checked(kex)
	}
	if err := r.phase(ctx, PhaseCreate, load.createAll, r.track.expect(names, checked), ""); err != nil {
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
		if err := r.pause(ctx, p.ticking, r.sc.Ticking); err != nil {
			return err
		}
	}
	return r.phase(ctx, PhaseDelete, load.deleteAll, r.track.expect(names, gone), PhaseShutdown)
}

// isTicking reports whether phase is one where the objects are left to
// their periodic work, whose lateness is measured.
func isTicking(phase string) bool { return phase == PhaseTimer || phase == PhaseDaemon }
