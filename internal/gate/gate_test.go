package gate

import (
	"testing"
	"time"
)

func TestTheGateWakesEveryObjectOnlyWhenAReconcileMissedThem(t *testing.T) {
	count := func(g *Gate) *int {
		n := 0
		g.WhenOpened(func() { n++ })
		return &n
	}

	quiet := &Gate{}
	woken := count(quiet)
	quiet.SetStarted()
	if *woken != 0 {
		t.Error("the first opening woke every object though no reconcile was turned away")
	}
	quiet.Pause("a peer")
	quiet.Resume()
	if *woken != 1 {
		t.Errorf("reopening after a pause woke the objects %d times, want once", *woken)
	}

	early := &Gate{}
	woken = count(early)
	if early.Admit() {
		t.Fatal("a gate that has not started admitted a reconcile")
	}
	early.SetStarted()
	if *woken != 1 {
		t.Errorf("the first opening after a reconcile was turned away woke the objects %d times, want once", *woken)
	}
	if !early.Admit() {
		t.Error("the open gate turned a reconcile away")
	}
}

func TestAnUnheldShardHandlesNothingUntilHeldAndAClosedGateNeverOpens(t *testing.T) {
	g := &Gate{}
	woken, paused := 0, 0
	g.WhenOpened(func() { woken++ })
	g.WhenPaused(func() { paused++ })
	g.Unheld()
	g.SetStarted()
	if g.Admit() {
		t.Fatal("a replica that does not hold its shard admitted a reconcile")
	}
	g.Held()
	if !g.Admit() || woken != 1 {
		t.Fatalf("holding the shard: admitted %v, objects woken %d times; want admitted, woken once", g.Open(), woken)
	}
	g.Close()
	if g.Admit() || !g.Closed() || paused != 1 {
		t.Fatalf("closing: admitted %v, closed %v, paused %d times; want refused, closed, paused once", g.Open(), g.Closed(), paused)
	}
	g.Pause("a peer")
	g.Resume()
	g.Held()
	if g.Open() || woken != 1 {
		t.Errorf("a closed gate opened again (open %v, woken %d times)", g.Open(), woken)
	}
}

func TestWatchEventsWaitUntilTheReplicaKnowsWhetherItHoldsItsShard(t *testing.T) {
	(&Gate{}).AwaitShard(time.Hour) // without sharding: no wait
	for name, decide := range map[string]func(*Gate){"held": (*Gate).Held, "held elsewhere": (*Gate).HeldElsewhere, "closed": (*Gate).Close} {
		g := &Gate{}
		g.Unheld()
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.AwaitShard(time.Hour)
		}()
		decide(g)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the wait did not end", name)
		}
		g.AwaitShard(time.Hour) // decided: no wait
	}
}
