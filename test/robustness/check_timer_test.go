package robustness

import (
	"testing"

	"github.com/gopf-dev/gopf/handlers"
)

// withTimer says the operator of the history has a timer every
// TimerInterval.
func (b *history) withTimer() *history {
	b.h.TimerInterval = TimerInterval
	return b
}

// timerStart begins a new timer run of process p; timerEnd ends the last.
func (b *history) timerStart(p int) *history {
	b.timerID++
	return b.add(Event{Kind: EventTimerStart, Process: p, Run: b.timerID, Handler: HandlerTimer})
}

func (b *history) timerEnd(p int) *history {
	return b.add(Event{Kind: EventTimerEnd, Process: p, Run: b.timerID, Handler: HandlerTimer})
}

// ticking lets twice TimerBound pass while process p runs the timer every
// TimerInterval.
func (b *history) ticking(p int) *history {
	for end := b.tick.Add(2 * TimerBound); b.tick.Before(end); b.tick = b.tick.Add(TimerInterval) {
		b.timerStart(p).timerEnd(p)
	}
	return b
}

// stoppingFirst asks process 1 to stop gracefully.
func (b *history) stoppingFirst() *history { return b.add(Event{Kind: EventStopping, Process: 1}) }

// createdWithTimer is a process that created obj0, handled it, started its
// daemon (id 1) and ran its timer for longer than TimerBound.
func createdWithTimer() *history {
	return newHistory().withTimer().start(1).write(v1).
		call(1, HandlerCreate, v1).call(1, HandlerField, v1).daemonStart(1, 1).
		ticking(1)
}

func TestCheckAcceptsATimerThatKeepsTheContract(t *testing.T) {
	h := createdWithTimer().
		stoppingFirst().timerStart(1).timerEnd(1). // a graceful stop waits for the run under way
		daemonStop(1, 1, handlers.StopOperatorExiting).stopFirst().
		start(2).call(2, HandlerResume, v1).daemonStart(2, 2).ticking(2).
		timerStart(2).kill(2). // the run ends at the kill
		start(3).call(3, HandlerResume, v1).daemonStart(3, 3).ticking(3).
		add(Event{Kind: EventDelete}).call(3, HandlerDelete, v1).daemonStop(3, 3, handlers.StopDeleted).
		timerStart(3).timerEnd(3). // taken from the queue just before gopf stopped the timer
		landed().                  // the finalizer's removal
		final(Final{Writes: 5})
	wantOnly(t, h, "")
}

func TestCheckReportsTwoRunsOfATimerAtOnce(t *testing.T) {
	t.Run("in one process", func(t *testing.T) {
		h := createdWithTimer().timerStart(1).timerStart(1).timerEnd(1).
			final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleTimerOnce)
	})
	t.Run("in a process started while the old one ran", func(t *testing.T) {
		h := createdWithTimer().timerStart(1).
			start(2).call(2, HandlerResume, v1).timerStart(2).timerEnd(2).
			final(Final{Exists: true, Versions: v1, Writes: 4})
		wantOnly(t, h, RuleTimerOnce)
	})
}

func TestCheckReportsAnObjectWhoseTimerDoesNotRun(t *testing.T) {
	t.Run("never", func(t *testing.T) {
		h := newHistory().withTimer().start(1).write(v1).call(1, HandlerCreate, v1).call(1, HandlerField, v1).
			daemonStart(1, 1).wait().final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleTimerRuns)
	})
	t.Run("too late after its process started", func(t *testing.T) {
		h := newHistory().withTimer().start(1).write(v1).call(1, HandlerCreate, v1).call(1, HandlerField, v1).
			daemonStart(1, 1).wait().ticking(1).final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleTimerRuns)
	})
	t.Run("not again after a kill", func(t *testing.T) {
		h := createdWithTimer().kill(1).start(2).call(2, HandlerResume, v1).daemonStart(2, 2).wait().
			final(Final{Exists: true, Versions: v1, Writes: 4})
		wantOnly(t, h, RuleTimerRuns)
	})
	t.Run("no more after some runs", func(t *testing.T) {
		h := createdWithTimer().wait().final(Final{Exists: true, Versions: v1, Writes: 3})
		wantOnly(t, h, RuleTimerRuns)
	})
}

func TestCheckReportsATimerThatOutlivesTheDeletion(t *testing.T) {
	t.Run("a run after the delete handler ran", func(t *testing.T) {
		h := createdWithTimer().add(Event{Kind: EventDelete}).call(1, HandlerDelete, v1).daemonStop(1, 1, handlers.StopDeleted)
		h.tick = h.tick.Add(TimerInterval + TimerSlack)
		wantOnly(t, h.timerStart(1).timerEnd(1).landed().final(Final{Writes: 4}), RuleTimerDeleted)
	})
	t.Run("a run after the object was released", func(t *testing.T) {
		h := createdWithTimer().add(Event{Kind: EventDelete}).call(1, HandlerDelete, v1).daemonStop(1, 1, handlers.StopDeleted).
			landed().timerStart(1).timerEnd(1).final(Final{Writes: 4})
		wantOnly(t, h, RuleTimerDeleted)
	})
	t.Run("a run under way when the object was released", func(t *testing.T) {
		h := createdWithTimer().add(Event{Kind: EventDelete}).timerStart(1).call(1, HandlerDelete, v1).
			daemonStop(1, 1, handlers.StopDeleted).landed().timerEnd(1).final(Final{Writes: 4})
		wantOnly(t, h, RuleTimerDeleted)
	})
	t.Run("a run in a process started after the deletion", func(t *testing.T) {
		h := createdWithTimer().add(Event{Kind: EventDelete}).kill(1).
			start(2).timerStart(2).timerEnd(2).call(2, HandlerDelete, v1).landed().final(Final{Writes: 4})
		wantOnly(t, h, RuleTimerDeleted)
	})
}

func TestCheckReportsATimerRunUnderWayWhenItsProcessStopped(t *testing.T) {
	h := createdWithTimer().stoppingFirst().timerStart(1).
		daemonStop(1, 1, handlers.StopOperatorExiting).stopFirst().
		final(Final{Exists: true, Versions: v1, Writes: 3})
	wantOnly(t, h, RuleTimerStop)
}
