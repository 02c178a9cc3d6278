package engine

import "testing"

func TestTheGateWakesEveryObjectOnlyWhenAReconcileMissedThem(t *testing.T) {
	count := func(g *gate) *int {
		n := 0
		g.WhenOpened(func() { n++ })
		return &n
	}

	quiet := &gate{}
	woken := count(quiet)
	quiet.SetStarted()
	if *woken != 0 {
		t.Error("the first opening woke every object though no reconcile was turned away")
	}
	quiet.pause("a peer")
	quiet.resume()
	if *woken != 1 {
		t.Errorf("reopening after a pause woke the objects %d times, want once", *woken)
	}

	early := &gate{}
	woken = count(early)
	if early.admit() {
		t.Fatal("a gate that has not started admitted a reconcile")
	}
	early.SetStarted()
	if *woken != 1 {
		t.Errorf("the first opening after a reconcile was turned away woke the objects %d times, want once", *woken)
	}
	if !early.admit() {
		t.Error("the open gate turned a reconcile away")
	}
}
