package robustness

import (
	"slices"
	"testing"

	"github.com/gopf-dev/gopf/handlers"
)

// wait lets twice DaemonBound pass before the next event.
func (b *history) wait() *history {
	b.tick = b.tick.Add(2 * DaemonBound)
	return b
}

func (b *history) daemonStart(p, id int) *history {
	return b.add(Event{Kind: EventDaemonStart, Process: p, Run: id, Handler: HandlerDaemon})
}

func (b *history) daemonStop(p, id int, reason handlers.StopReason) *history {
	return b.add(Event{Kind: EventDaemonStop, Process: p, Run: id, Handler: HandlerDaemon, Detail: string(reason)})
}

// createdWithDaemon is a process that created obj0, handled it and ran its
// daemon (id 1) for longer than DaemonBound.
func createdWithDaemon() *history {
	return newHistory().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).daemonStart(1, 1).
		wait()
}

// wantOnly fails unless the violations are of rule alone (or none, for "").
func wantOnly(t *testing.T, h History, rule string) {
	t.Helper()
	v := Check(h)
	got := rules(v)
	if rule == "" && len(got) > 0 || rule != "" && (len(got) == 0 || slices.ContainsFunc(got, func(r string) bool { return r != rule })) {
		t.Fatalf("want violations of %q only, got %v", rule, v)
	}
}

func TestCheckAcceptsDaemonsThatKeepTheContract(t *testing.T) {
	h := createdWithDaemon().
		daemonStop(1, 1, handlers.StopOperatorExiting).stopFirst().
		start(2).call(2, HandlerResume, v1).daemonStart(2, 2).wait().
		kill(2). // its daemon ends at the kill
		start(3).call(3, HandlerResume, v1).daemonStart(3, 3).wait().
		add(Event{Kind: EventDelete}).call(3, HandlerDelete, v1).daemonStop(3, 3, handlers.StopDeleted).
		landed(). // the finalizer's removal
		final(Final{Writes: 5})
	wantOnly(t, h, "")
}

func TestCheckReportsTwoDaemonsOfAnObjectAtOnce(t *testing.T) {
	t.Run("in one process", func(t *testing.T) {
		wantOnly(t, createdWithDaemon().daemonStart(1, 2).final(Final{Exists: true, Versions: v1, Writes: 3}), RuleDaemonOnce)
	})
	t.Run("in a process started while the old one ran", func(t *testing.T) {
		h := createdWithDaemon().start(2).call(2, HandlerResume, v1).daemonStart(2, 2).
			final(Final{Exists: true, Versions: v1, Writes: 4})
		wantOnly(t, h, RuleDaemonOnce)
	})
}

func TestCheckReportsAnObjectWithoutItsDaemon(t *testing.T) {
	t.Run("never started", func(t *testing.T) {
		h := newHistory().start(1).write(v1).call(1, HandlerCreate, v1).call(1, HandlerField, v1).
			wait().final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleDaemonRuns)
	})
	t.Run("not started again after a kill", func(t *testing.T) {
		h := createdWithDaemon().kill(1).start(2).call(2, HandlerResume, v1).wait().
			final(Final{Exists: true, Versions: v1, Writes: 4})
		wantOnly(t, h, RuleDaemonRuns)
	})
	t.Run("started too late", func(t *testing.T) {
		h := newHistory().start(1).write(v1).call(1, HandlerCreate, v1).call(1, HandlerField, v1).
			wait().daemonStart(1, 1).final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleDaemonRuns)
	})
}

func TestCheckReportsADaemonThatOutlivesTheDeletion(t *testing.T) {
	t.Run("still running when the object was released", func(t *testing.T) {
		h := createdWithDaemon().add(Event{Kind: EventDelete}).call(1, HandlerDelete, v1).
			landed().daemonStop(1, 1, handlers.StopDeleted).final(Final{Writes: 4})
		wantOnly(t, h, RuleDaemonDeleted)
	})
	t.Run("started after the delete handler ran", func(t *testing.T) {
		h := createdWithDaemon().daemonStop(1, 1, handlers.StopOperatorExiting).stopFirst().
			start(2).call(2, HandlerResume, v1).daemonStart(2, 2).add(Event{Kind: EventDelete}).
			call(2, HandlerDelete, v1).daemonStop(2, 2, handlers.StopDeleted).daemonStart(2, 3).daemonStop(2, 3, handlers.StopDeleted).
			landed().final(Final{Writes: 5})
		wantOnly(t, h, RuleDaemonDeleted)
	})
	t.Run("started by a process that began after the deletion", func(t *testing.T) {
		h := createdWithDaemon().add(Event{Kind: EventDelete}).kill(1).
			start(2).daemonStart(2, 2).call(2, HandlerDelete, v1).daemonStop(2, 2, handlers.StopDeleted).
			landed().final(Final{Writes: 5})
		wantOnly(t, h, RuleDaemonDeleted)
	})
}

func TestCheckReportsADaemonStopWithoutItsReason(t *testing.T) {
	for name, tc := range map[string]struct {
		reason handlers.StopReason
		stop   bool // the process stops gracefully after the daemon's stop
	}{
		"no reason":                       {reason: "", stop: true},
		"deleted, and it was not":         {reason: handlers.StopDeleted, stop: true},
		"operator exiting, and it ran on": {reason: handlers.StopOperatorExiting},
		"a reason the suite never gives":  {reason: handlers.StopHandedOver, stop: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := createdWithDaemon().daemonStop(1, 1, tc.reason)
			if tc.stop {
				b.stopFirst()
			}
			wantOnly(t, b.final(Final{Exists: true, Versions: v1, Writes: 3}), RuleDaemonStop)
		})
	}
	t.Run("still running when its process stopped gracefully", func(t *testing.T) {
		wantOnly(t, createdWithDaemon().stopFirst().final(Final{Exists: true, Versions: v1, Writes: 3}), RuleDaemonStop)
	})
}

// Where the state is in status, the write that releases the object (the
// finalizer's removal) carries no state: the release is that write, not
// the state's write before it (seed 1795940510635511280 was a false
// violation while the checker dropped writes without state).
func TestCheckTakesTheFinalizersRemovalWithoutStateForTheRelease(t *testing.T) {
	release := Event{Kind: EventLandedNoState, Detail: "PATCH kopfexamples: 200"}
	deleting := func() *history {
		return createdWithDaemon().add(Event{Kind: EventDelete}).call(1, HandlerDelete, v1).landed()
	}
	t.Run("the daemon stopped before it", func(t *testing.T) {
		h := deleting().daemonStop(1, 1, handlers.StopDeleted).add(release).final(Final{Writes: 4})
		if v := Check(h); len(v) > 0 {
			t.Errorf("violations %v, want none", v)
		}
	})
	t.Run("the daemon still ran", func(t *testing.T) {
		h := deleting().add(release).daemonStop(1, 1, handlers.StopDeleted).final(Final{Writes: 4})
		wantOnly(t, h, RuleDaemonDeleted)
	})
}
