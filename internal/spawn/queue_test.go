package spawn

import (
	"testing"
	"time"

	"github.com/gopf-dev/gopf/internal/contract"
)

// newTestTimer is a timer of handler id, in no queue.
func newTestTimer(id string) *timerState {
	t := &timerState{key: timerKey{id: id}, slot: queueSlot{index: -1}, reg: &contract.Handler{}}
	t.reg.Options.ID = id
	return t
}

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// takeAll takes every timer due at now, in order.
func takeAll(q *dueQueue, now time.Time) []string {
	var ids []string
	for {
		t, _ := q.next(now)
		if t == nil {
			return ids
		}
		ids = append(ids, t.key.id)
	}
}

func TestTheQueueHandsTimersOutWhenDueEarliestFirst(t *testing.T) {
	q := newDueQueue()
	a, b, c := newTestTimer("a"), newTestTimer("b"), newTestTimer("c")
	q.add(a, t0.Add(3*time.Second))
	q.add(b, t0.Add(time.Second))
	q.add(c, t0.Add(2*time.Second))
	if got, wait := q.next(t0); got != nil || wait != time.Second {
		t.Fatalf("before any is due: %v, wait %s; want none, wait 1s", got, wait)
	}
	if got := takeAll(q, t0.Add(2*time.Second)); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Errorf("due at 2s: %v, want [b c]", got)
	}
	if got, wait := q.next(t0.Add(2 * time.Second)); got != nil || wait != time.Second {
		t.Errorf("a is due in 1s: got %v, wait %s", got, wait)
	}
	if got := takeAll(q, t0.Add(time.Hour)); len(got) != 1 || got[0] != "a" {
		t.Errorf("due later: %v, want [a]", got)
	}
	if got, wait := q.next(t0); got != nil || wait >= 0 {
		t.Errorf("an empty queue: %v, wait %s; want none and a negative wait", got, wait)
	}
}

func TestATimerAddedTwiceKeepsTheEarlierTime(t *testing.T) {
	q := newDueQueue()
	a := newTestTimer("a")
	q.add(a, t0.Add(2*time.Second))
	q.add(a, t0.Add(5*time.Second))
	q.add(a, t0.Add(time.Second))
	if got := takeAll(q, t0.Add(time.Second)); len(got) != 1 {
		t.Errorf("due at 1s: %v, want a once", got)
	}
	if got := takeAll(q, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("a timer is in the queue at most once: %v", got)
	}
}

func TestATimerAddedWhileItRunsComesBackOnlyOnceDone(t *testing.T) {
	q := newDueQueue()
	a := newTestTimer("a")
	q.add(a, t0)
	if got, _ := q.next(t0); got != a {
		t.Fatalf("next: %v, want a", got)
	}
	q.add(a, t0.Add(2*time.Second))
	q.add(a, t0.Add(time.Second))
	if got := takeAll(q, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a running timer was handed out again: %v", got)
	}
	q.done(a)
	if got, wait := q.next(t0); got != nil || wait != time.Second {
		t.Errorf("after done: %v, wait %s; want a due at the earlier of its adds, 1s", got, wait)
	}
	if got := takeAll(q, t0.Add(time.Second)); len(got) != 1 {
		t.Errorf("after done: %v, want a", got)
	}
}

func TestARemovedTimerIsNotHandedOutNorComesBackWhenDone(t *testing.T) {
	q := newDueQueue()
	a, b := newTestTimer("a"), newTestTimer("b")
	q.add(a, t0)
	q.add(b, t0)
	q.remove(a)
	if got := takeAll(q, t0); len(got) != 1 || got[0] != "b" {
		t.Errorf("after removing a: %v, want [b]", got)
	}
	q.add(b, t0) // while it runs
	q.remove(b)
	q.done(b)
	if got := takeAll(q, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("a timer removed while it ran came back: %v", got)
	}
}

func TestDispatchHandsDueTimersToTheWorkersAndStops(t *testing.T) {
	q := newDueQueue()
	go q.dispatch()
	a := newTestTimer("a")
	q.add(a, time.Now().Add(time.Hour))
	b := newTestTimer("b")
	q.add(b, time.Now()) // earlier than what dispatch sleeps for
	if got := <-q.work; got != b {
		t.Errorf("first handed out: %v, want b", got.key)
	}
	q.shutDown()
	if _, open := <-q.work; open {
		t.Error("work is still open after shutDown")
	}
}
