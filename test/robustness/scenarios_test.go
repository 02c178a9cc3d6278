package robustness_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/robustness"
)

// changeWhileTheResumeRuns is the history of seed 1795917613440727417
// (issue 42) made deterministic: the object changes while no operator
// runs, so the next process calls its update and its resume handler for
// one cause; the update finishes, the object changes again while the
// resume runs, and the process stops, which cuts the resume and writes
// the update's finished record. The next process must call the update
// handler for the newer change: the record says the handler finished on
// the change before it.
var changeWhileTheResumeRuns = robustness.Sequence{
	{Kind: robustness.OpCreate, Object: 0},
	{Kind: robustness.OpSettle},
	{Kind: robustness.OpStop},
	{Kind: robustness.OpSpec, Object: 0},
	{Kind: robustness.OpArm, Object: 0, Handler: robustness.HandlerResume, Behaviour: robustness.BehaveBlock},
	{Kind: robustness.OpStart},
	{Kind: robustness.OpAwaitBlock}, // the update handler finished; the resume handler runs
	{Kind: robustness.OpSpec, Object: 0},
	{Kind: robustness.OpStop},
	{Kind: robustness.OpStart},
}

// A change made while a cause is unfinished reaches the update handler
// that finished the cause's earlier change, whichever storage keeps the
// state, Kopf's format included.
func TestAChangeWhileTheCauseIsUnfinishedReachesTheUpdateHandlerThatFinishedBeforeIt(t *testing.T) {
	class, _ := classNamed("KopfExample")
	for _, storage := range storages {
		t.Run(storageNames[storage], func(t *testing.T) {
			t.Parallel()
			h := runSequence(t, class, storage, changeWhileTheResumeRuns, 1, "the scenario of issue 42",
				"go test ./test/robustness -run 'TestAChangeWhileTheCauseIsUnfinished/"+storageNames[storage]+"$'")
			if updates(h) != 2 {
				t.Errorf("the update handler finished %d times, want 2 (the change made while no operator ran, and the one made while the resume ran)", updates(h))
			}
		})
	}
}

// updates counts the update handler's calls that finished.
func updates(h robustness.History) int {
	n := 0
	for _, e := range h.Events {
		if e.Kind == robustness.EventCall && e.Handler == robustness.HandlerUpdate && e.Outcome == robustness.Succeeded {
			n++
		}
	}
	return n
}

// killDuring kills the operator while the daemon of obj0 is
// mid-iteration, or a run of its timer is under way (it reported its
// start and waits for the answer): handler and moment say which. Then it
// stops the next one gracefully and deletes obj0 under the third: each
// process runs obj0's daemon or timer, never two at once, and the last
// stops it for the deletion before gopf lets the object go.
func killDuring(handler string, moment robustness.Moment) robustness.Sequence {
	return robustness.Sequence{
		{Kind: robustness.OpCreate, Object: 0},
		{Kind: robustness.OpCreate, Object: 1},
		{Kind: robustness.OpSettle},
		{Kind: robustness.OpArm, Object: 0, Handler: handler, Behaviour: robustness.BehaveKill, Moment: moment},
		{Kind: robustness.OpKill, Moment: moment},
		{Kind: robustness.OpSettle},
		{Kind: robustness.OpStop},
		{Kind: robustness.OpStart},
		{Kind: robustness.OpSettle},
		{Kind: robustness.OpDelete, Object: 0},
		{Kind: robustness.OpSettle},
	}
}

// A daemon killed mid-iteration with its process runs again in the next
// process, never beside itself; stopped gracefully, it says why.
func TestADaemonKilledMidIterationRunsOnceInTheNextProcess(t *testing.T) {
	class, _ := classNamed("KopfExample")
	h := runSequence(t, class, reconcile.StorageAuto, killDuring(robustness.HandlerDaemon, robustness.MomentInDaemon), 1, "the daemon scenario",
		"go test ./test/robustness -run 'TestADaemonKilledMidIteration'")
	kills, starts, reasons := 0, map[int]int{}, map[int]string{}
	for _, e := range h.Events {
		switch {
		case e.Kind == robustness.EventKill && strings.HasPrefix(e.Detail, string(robustness.MomentInDaemon)):
			kills++
		case e.Kind == robustness.EventDaemonStart && e.Object == "obj0":
			starts[e.Process]++
		case e.Kind == robustness.EventDaemonStop && e.Object == "obj0":
			reasons[e.Process] = e.Detail
		}
	}
	if kills != 1 {
		t.Errorf("%d kills during a daemon, want 1", kills)
	}
	if want := map[int]int{1: 1, 2: 1, 3: 1}; !maps.Equal(starts, want) {
		t.Errorf("obj0's daemon started %v times by process, want %v", starts, want)
	}
	want := map[int]string{2: string(handlers.StopOperatorExiting), 3: string(handlers.StopDeleted)}
	if !maps.Equal(reasons, want) {
		t.Errorf("obj0's daemon stopped %v by process, want %v (the killed process's daemon reports nothing)", reasons, want)
	}
}

// A timer run cut by a kill is not finished by anyone: the next process
// runs the timer again, from a new run, and never beside another; a
// graceful stop waits for the run under way.
func TestATimerKilledMidRunRunsAgainInTheNextProcess(t *testing.T) {
	class, _ := classNamed("KopfExample")
	h := runSequence(t, class, reconcile.StorageAuto, killDuring(robustness.HandlerTimer, robustness.MomentInTimer), 1, "the timer scenario",
		"go test ./test/robustness -run 'TestATimerKilledMidRun'")
	kills, runs, ended, cut := 0, map[int]int{}, map[int]bool{}, 0
	for _, e := range h.Events {
		switch {
		case e.Kind == robustness.EventKill && strings.HasPrefix(e.Detail, string(robustness.MomentInTimer)):
			kills++
		case e.Kind == robustness.EventTimerStart && e.Object == "obj0":
			runs[e.Process]++
			ended[e.Run] = false
		case e.Kind == robustness.EventTimerEnd && e.Object == "obj0":
			ended[e.Run] = true
		}
	}
	for _, done := range ended {
		if !done {
			cut++
		}
	}
	if kills != 1 {
		t.Errorf("%d kills during a timer run, want 1", kills)
	}
	if cut != 1 {
		t.Errorf("%d runs of obj0's timer never ended, want 1 (the one cut by the kill)", cut)
	}
	// The settles take 2 s of quiet each, five intervals of the timer.
	for p := 1; p <= 3; p++ {
		if runs[p] < 2 {
			t.Errorf("obj0's timer ran %v times by process, want at least twice in each of processes 1 to 3", runs)
			break
		}
	}
}
