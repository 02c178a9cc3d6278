package spawn

import (
	"container/heap"
	"sync"
	"time"
)

// dueQueue hands timers to the workers when they are due: a heap of the
// waiting timers ordered by when each is due, and one goroutine (dispatch)
// that sleeps until the earliest. A timer is in it at most once (added
// again, it keeps the earlier time) and never while a worker runs it: added
// meanwhile, it goes back in when that run is done, so that a timer never
// overlaps itself. What it keeps of a timer is the timer's own queueSlot and
// a pointer in the heap: no map and no entry of its own, where client-go's
// delaying queue kept about 300 bytes per timer.
type dueQueue struct {
	mu      sync.Mutex
	waiting timerHeap
	wake    chan struct{}    // the earliest time changed: dispatch sleeps again
	work    chan *timerState // due timers, to the workers; closed when the queue stops
	stop    chan struct{}    // closed by shutDown
	once    sync.Once
}

// queueSlot is a timer's place in its dueQueue, under the queue's lock.
type queueSlot struct {
	at      time.Time // when it is due: in the heap, or once its run is done (again)
	index   int       // its place in the heap; -1 when not there
	running bool      // handed to a worker and not done yet
	again   bool      // added while running
}

func newDueQueue() *dueQueue {
	return &dueQueue{wake: make(chan struct{}, 1), work: make(chan *timerState), stop: make(chan struct{})}
}

// add has t due at at, unless it is due earlier already.
func (q *dueQueue) add(t *timerState, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := &t.slot
	switch {
	case s.running:
		if !s.again || at.Before(s.at) {
			s.at, s.again = at, true
		}
	case s.index >= 0:
		if at.Before(s.at) {
			s.at = at
			heap.Fix(&q.waiting, s.index)
			q.wakeIfFirst(t)
		}
	default:
		q.push(t, at)
	}
}

// remove takes t out of the queue, and forgets an add while it runs.
func (q *dueQueue) remove(t *timerState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.slot.index >= 0 {
		heap.Remove(&q.waiting, t.slot.index)
	}
	t.slot.again = false
}

// done says a worker is done with t: it goes back in if added meanwhile.
func (q *dueQueue) done(t *timerState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t.slot.running = false
	if t.slot.again {
		t.slot.again = false
		q.push(t, t.slot.at)
	}
}

// next takes the earliest timer out if it is due at now, as running; else
// it returns how long until it is (a negative wait: none waits).
func (q *dueQueue) next(now time.Time) (*timerState, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return nil, -1
	}
	first := q.waiting[0]
	if wait := first.slot.at.Sub(now); wait > 0 {
		return nil, wait
	}
	heap.Pop(&q.waiting)
	first.slot.running = true
	return first, 0
}

// push puts t in the heap, due at at; q.mu is held.
func (q *dueQueue) push(t *timerState, at time.Time) {
	t.slot.at = at
	heap.Push(&q.waiting, t)
	q.wakeIfFirst(t)
}

// wakeIfFirst wakes dispatch when t became the earliest; q.mu is held.
func (q *dueQueue) wakeIfFirst(t *timerState) {
	if t.slot.index != 0 {
		return
	}
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// dispatch hands each timer to a worker when it is due, until shutDown;
// then it closes work.
func (q *dueQueue) dispatch() {
	defer close(q.work)
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		t, wait := q.next(time.Now())
		if t != nil {
			select {
			case q.work <- t:
				continue
			case <-q.stop:
				return
			}
		}
		if wait < 0 {
			wait = time.Hour // nothing waits: until something is added
		}
		sleep.Reset(wait)
		select {
		case <-sleep.C:
		case <-q.wake:
		case <-q.stop:
			return
		}
	}
}

// shutDown stops dispatch; the workers end once they are done.
func (q *dueQueue) shutDown() { q.once.Do(func() { close(q.stop) }) }

// timerHeap orders timers by when they are due (container/heap).
type timerHeap []*timerState

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].slot.at.Before(h[j].slot.at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot.index, h[j].slot.index = i, j
}

func (h *timerHeap) Push(x any) {
	t := x.(*timerState)
	t.slot.index = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil // no longer kept alive by the heap's array
	*h = old[:len(old)-1]
	t.slot.index = -1
	return t
}
