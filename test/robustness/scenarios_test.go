package robustness_test

import (
	"testing"

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
