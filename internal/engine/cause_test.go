package engine

import (
	"testing"

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
