package objsize

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

func TestAResultIsRefusedOnlyPastTheBudget(t *testing.T) {
	result := map[string]any{"blob": strings.Repeat("y", 1000)}
	data, _ := state.Marshal(result)
	measured := 0
	object := func(n int) func() int { return func() int { measured++; return n } }
	if err := CheckResult("h", result, object(Budget-len(data))); err != nil {
		t.Errorf("a result that just fits: %v", err)
	}
	err := CheckResult("h", result, object(Budget-len(data)+1))
	var permanent *handlers.PermanentError
	if !errors.As(err, &permanent) || !strings.Contains(err.Error(), "status.h") {
		t.Errorf("a result one byte over: %v", err)
	}
	if err := CheckResult("h", nil, object(Limit)); err != nil || measured != 2 {
		t.Errorf("no result: %v, the object measured %d times, want 2 (not for no result)", err, measured)
	}
}

func TestCompactTurnsEveryEssenceOfTheStateIntoItsCompactForm(t *testing.T) {
	full := `{"spec":{"field":"` + strings.Repeat("x", 100) + `","replicas":3}}`
	st := &state.State{Essence: full, Progress: map[string]*state.Progress{
		"a": {Handled: full}, "b": {Handled: ""}, "c": {Handled: `{"spec":{"replicas":2}}`},
	}}
	Compact(st, [][]string{{"spec", "replicas"}})
	if !state.IsCompact(st.Essence) || st.Progress["a"].Handled != st.Essence {
		t.Errorf("the same essence, compacted: %s and %s", st.Essence, st.Progress["a"].Handled)
	}
	if st.Progress["b"].Handled != "" || !state.IsCompact(st.Progress["c"].Handled) {
		t.Errorf("records: %q, %q", st.Progress["b"].Handled, st.Progress["c"].Handled)
	}
	if v, _ := state.Lookup(state.DecodeJSON(st.Essence), []string{"spec", "replicas"}); v != float64(3) {
		t.Errorf("the named field is %v in %s, want 3", v, st.Essence)
	}
}

func TestExpandedReplacesTheCompactEssenceInACopy(t *testing.T) {
	st := &state.State{Essence: "compact", Progress: map[string]*state.Progress{"a": {Handled: "compact"}, "b": {Handled: "older"}}}
	out := Expanded(st, "compact", "full")
	if out.Essence != "full" || out.Progress["a"].Handled != "full" || out.Progress["b"].Handled != "older" {
		t.Errorf("expanded: %+v, %+v", out, out.Progress)
	}
	if st.Essence != "compact" || st.Progress["a"].Handled != "compact" {
		t.Errorf("the original changed: %+v, %+v", st, st.Progress)
	}
}
