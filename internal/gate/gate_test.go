package gate

import "testing"

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
