package decide

import (
	"testing"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

func TestChangeReasonDerivesTheCauseFromTheKnownState(t *testing.T) {
	const now, before = `{"spec":{"field":"new"}}`, `{"spec":{"field":"old"}}`
	unfinishedUpdate := map[string]*state.Progress{"update_fn": {Reason: handlers.ReasonUpdate, Retries: 1}}
	finishedUpdate := map[string]*state.Progress{"update_fn": {Reason: handlers.ReasonUpdate, Success: true}}
	for name, tc := range map[string]struct {
		known      *state.State
		resumed    bool
		want       handlers.Reason
		withResume bool
	}{
		"nothing stored is a create":                         {known: nil, want: handlers.ReasonCreate},
		"state without an essence is a create":               {known: &state.State{Progress: unfinishedUpdate}, want: handlers.ReasonCreate},
		"a create never comes with resume handlers":          {known: nil, resumed: false, want: handlers.ReasonCreate},
		"an unchanged object seen before needs nothing":      {known: &state.State{Essence: now}, resumed: true, want: ""},
		"an unchanged object on first sight is resumed":      {known: &state.State{Essence: now}, want: handlers.ReasonResume, withResume: true},
		"a changed essence is an update":                     {known: &state.State{Essence: before}, resumed: true, want: handlers.ReasonUpdate},
		"a change while the operator was down adds a resume": {known: &state.State{Essence: before}, want: handlers.ReasonUpdate, withResume: true},
		"an unfinished update goes on for the same essence": {
			known: &state.State{Essence: now, Progress: unfinishedUpdate}, resumed: true, want: handlers.ReasonUpdate},
		"a finished update record alone is nothing to do": {
			known: &state.State{Essence: now, Progress: finishedUpdate}, resumed: true, want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, withResume := changeReason(tc.known, now, tc.resumed)
			if got != tc.want || withResume != tc.withResume {
				t.Fatalf("changeReason = (%q, resume %v), want (%q, resume %v)", got, withResume, tc.want, tc.withResume)
			}
		})
	}
}

func TestHasUnfinishedLooksAtRecordsOfTheGivenReasonOnly(t *testing.T) {
	create, update := handlers.ReasonCreate, handlers.ReasonUpdate
	later := time.Date(2026, 11, 23, 3, 18, 19, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		progress map[string]*state.Progress
		want     bool
	}{
		{"no records", nil, false},
		{"an unfinished record of the purpose", map[string]*state.Progress{"a": {Reason: update}}, true},
		{"a finished record of the purpose", map[string]*state.Progress{"a": {Reason: update, Success: true}}, false},
		{"a failed record of the purpose", map[string]*state.Progress{"a": {Reason: update, Failure: true}}, false},
		{"an unfinished record of another purpose", map[string]*state.Progress{"a": {Reason: create}}, false},
		{"one unfinished among finished ones", map[string]*state.Progress{
			"a": {Reason: update, Success: true}, "b": {Reason: update, Delayed: &later}, "c": {Reason: update, Failure: true},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasUnfinished(&state.State{Progress: tc.progress}, update); got != tc.want {
				t.Errorf("hasUnfinished = %v, want %v", got, tc.want)
			}
		})
	}
}
