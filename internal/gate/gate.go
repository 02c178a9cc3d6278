package gate

import (
	"sync"
	"time"
)

// Gate says whether the operator may handle objects: once its startup
// handlers have succeeded, while no peer with a higher priority is alive,
// while a sharded replica holds its shard (Unheld), and until the operator
// stops (Close).
// Reconciles, event handlers, timers and daemons all look at it; when it
// opens again, every object is reconciled anew. When it opens the first
// time, that is needed only if a reconcile was turned away before: else
// every object is still to come, from the informers' initial lists.
type Gate struct {
	mu       sync.Mutex
	started  bool
	pausedBy string        // why the operator is paused; "" when it is not
	unheld   bool          // a sharded replica's shard is not held (yet)
	decided  chan struct{} // closed once a sharded replica knows whether it holds its shard
	closed   bool          // the operator stops: the gate never opens again
	opened   bool          // it was open once
	refused  bool          // a reconcile was turned away since it was last open
	onOpen   []func()
	onPause  []func()
}

// Open reports whether objects may be handled.
func (g *Gate) Open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open()
}

// open is Open with g.mu held.
func (g *Gate) open() bool { return g.started && g.pausedBy == "" && !g.unheld && !g.closed }

// Admit reports whether a reconcile may handle objects now, and remembers
// one it turns away, so that the objects are reconciled when it opens.
func (g *Gate) Admit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ok := g.open()
	g.refused = g.refused || !ok
	return ok
}

// SetStarted records that the startup handlers are done.
func (g *Gate) SetStarted() { g.change(func() { g.started = true }) }

// Pause closes the gate for a reason; resume opens it again.
func (g *Gate) Pause(reason string) { g.change(func() { g.pausedBy = reason }) }
func (g *Gate) Resume()             { g.change(func() { g.pausedBy = "" }) }

// Unheld keeps the gate closed until Held: a sharded replica works on its
// shard's objects only while it holds the shard's Lease.
func (g *Gate) Unheld() {
	g.change(func() {
		g.unheld = true
		g.decided = make(chan struct{})
	})
}

// Held lets the gate open once the replica holds its shard's Lease.
func (g *Gate) Held() {
	g.change(func() {
		g.unheld = false
		g.decide()
	})
}

// HeldElsewhere records that another process holds the replica's shard:
// the gate stays closed, and AwaitShard waits no longer.
func (g *Gate) HeldElsewhere() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decide()
}

// decide ends AwaitShard's wait; g.mu is held.
func (g *Gate) decide() {
	if g.decided == nil {
		return
	}
	select {
	case <-g.decided:
	default:
		close(g.decided)
	}
}

// AwaitShard waits, up to timeout, until a sharded replica knows whether
// it holds its shard (Held, HeldElsewhere, Close), so that watch events
// that arrive while it acquires its Lease at start are not dropped for a
// gate that is about to open. Without sharding it returns at once.
func (g *Gate) AwaitShard(timeout time.Duration) {
	g.mu.Lock()
	ch := g.decided
	g.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// Close closes the gate for good, as the operator stops: nothing starts
// any more, and the pause callbacks stop what runs.
func (g *Gate) Close() {
	g.change(func() {
		g.closed = true
		g.decide()
	})
}

// Closed reports whether the gate was closed for good.
func (g *Gate) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Paused returns the reason of a pause, or "".
func (g *Gate) Paused() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pausedBy
}

// WhenOpened and whenPaused register callbacks for the gate's transitions.
func (g *Gate) WhenOpened(fn func()) { g.mu.Lock(); g.onOpen = append(g.onOpen, fn); g.mu.Unlock() }
func (g *Gate) WhenPaused(fn func()) { g.mu.Lock(); g.onPause = append(g.onPause, fn); g.mu.Unlock() }

func (g *Gate) change(fn func()) {
	g.mu.Lock()
	was := g.open()
	fn()
	now := g.open()
	var callbacks []func()
	switch {
	case !was && now:
		if g.opened || g.refused {
			callbacks = append(callbacks, g.onOpen...)
		}
		g.opened, g.refused = true, false
	case was && !now:
		callbacks = append(callbacks, g.onPause...)
	}
	g.mu.Unlock()
	for _, cb := range callbacks {
		cb()
	}
}

// HasStarted reports whether the startup handlers are done.
func (g *Gate) HasStarted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}
