package engine

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

// Times as Kopf and gopf write them: UTC, with microseconds.
var (
	started = time.Date(2026, 11, 23, 3, 8, 19, 302313000, time.UTC)
	later   = started.Add(10 * time.Minute)
)

func TestProgressIsFinishedOnSuccessOrFailureOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  state.Progress
		want bool
	}{
		{"a new record", state.Progress{Reason: handlers.ReasonCreate, Started: started}, false},
		{"a record waiting for a retry", state.Progress{Retries: 3, Delayed: &later, Message: "not yet"}, false},
		{"a success", state.Progress{Success: true, Retries: 1}, true},
		{"a failure", state.Progress{Failure: true, Message: "broken"}, true},
		{"a record claiming both", state.Progress{Success: true, Failure: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Finished(); got != tc.want {
				t.Errorf("finished() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStateCloneIsIndependentOfTheOriginal(t *testing.T) {
	orig := func() *state.State {
		return &state.State{
			Essence: `{"spec":{"a":1}}`,
			Progress: map[string]*state.Progress{
				"a": {Reason: handlers.ReasonUpdate, Started: started, Retries: 1, Delayed: &later, Message: "m"},
				"b": {Reason: handlers.ReasonUpdate, Started: started, Success: true, Handled: `{"spec":{"a":1}}`},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(c *state.State)
	}{
		{"the essence", func(c *state.State) { c.Essence = `{}` }},
		{"a record's fields", func(c *state.State) {
			r := c.Progress["a"]
			r.Retries, r.Success, r.Message, r.Handled, r.Reason = 9, true, "", "x", handlers.ReasonDelete
			r.Delayed, r.Started = nil, later
		}},
		{"the set of records", func(c *state.State) {
			delete(c.Progress, "a")
			c.Progress["new"] = &state.Progress{Reason: handlers.ReasonUpdate}
		}},
		{"a record replaced", func(c *state.State) { c.Progress["b"] = &state.Progress{} }},
	} {
		t.Run("changing "+tc.name+" of the clone", func(t *testing.T) {
			o := orig()
			want := o.Encode()
			c := o.Clone()
			if c.Encode() != want {
				t.Fatalf("clone = %s, want %s", c.Encode(), want)
			}
			tc.change(c)
			if got := o.Encode(); got != want {
				t.Errorf("the original changed with its clone:\n %s\nwas\n %s", got, want)
			}
		})
	}
	t.Run("a state without progress", func(t *testing.T) {
		c := (&state.State{Essence: "{}"}).Clone()
		if c.Progress != nil || c.Essence != "{}" {
			t.Errorf("clone = %#v", c)
		}
	})
}

func TestStateEncodingIsCanonical(t *testing.T) {
	if got := (*state.State)(nil).Encode(); got != "{}" {
		t.Errorf("nothing encodes as %q, want {}, as an empty state: both mean nothing stored", got)
	}
	if got := (&state.State{}).Encode(); got != "{}" {
		t.Errorf("an empty state encodes as %q, want {}", got)
	}
	if got := (&state.State{Progress: map[string]*state.Progress{}}).Encode(); got != "{}" {
		t.Errorf("a state with an empty progress map encodes as %q, want {}", got)
	}
	// The same records, built in different orders, encode the same.
	a := &state.State{Essence: "{}", Progress: map[string]*state.Progress{}}
	b := &state.State{Essence: "{}", Progress: map[string]*state.Progress{}}
	ids := []string{"z", "a", "m/sub", "b.c"}
	for i := range ids {
		a.Progress[ids[i]] = &state.Progress{Reason: handlers.ReasonCreate, Started: started, Retries: i}
		j := len(ids) - 1 - i
		b.Progress[ids[j]] = &state.Progress{Reason: handlers.ReasonCreate, Started: started, Retries: j}
	}
	if a.Encode() != b.Encode() {
		t.Errorf("equal states encode differently:\n %s\n %s", a.Encode(), b.Encode())
	}
	b.Progress["z"].Retries++
	if a.Encode() == b.Encode() {
		t.Error("different states encode the same")
	}
}

func TestProgressPatchValueNullsWhatTheRecordLacks(t *testing.T) {
	got := (&state.Progress{Reason: handlers.ReasonCreate, Started: started, Retries: 2}).PatchValue()
	want := map[string]any{
		"purpose": "create", "started": "2026-11-23T03:08:19.302313Z", "retries": 2.0,
		"delayed": nil, "success": nil, "failure": nil, "message": nil, "handled": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patchValue =\n %v\nwant\n %v", got, want)
	}
	full := &state.Progress{
		Reason: handlers.ReasonUpdate, Started: started, Delayed: &later, Retries: 1, Success: true, Failure: true, Message: "m", Handled: "{}",
	}
	for k, v := range full.PatchValue() {
		if v == nil {
			t.Errorf("a record with every field set nulls %q", k)
		}
	}
}

func TestDecodeProgressReadsRecordsAndRefusesAnythingElse(t *testing.T) {
	const where = "the place"
	kopfRecord := `{"started":"2026-11-23T03:08:19.302326+00:00","delayed":"2026-11-23T03:18:19.526537+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"not yet"}`
	for _, tc := range []struct {
		name string
		raw  any
		want map[string]*state.Progress // when readable
		bad  bool
	}{
		{name: "nothing is no records", raw: nil},
		{name: "a decoded map of records", raw: map[string]any{"a": map[string]any{"purpose": "create", "started": "2026-11-23T03:08:19.302313Z", "retries": 1.0}},
			want: map[string]*state.Progress{"a": {Reason: handlers.ReasonCreate, Started: started, Retries: 1}}},
		{name: "a map of records as JSON text", raw: `{"a":{"purpose":"update","started":"2026-11-23T03:08:19.302313Z","success":true,"handled":"{}"}}`,
			want: map[string]*state.Progress{"a": {Reason: handlers.ReasonUpdate, Started: started, Success: true, Handled: "{}"}}},
		{name: "an empty map is no records", raw: map[string]any{}, want: map[string]*state.Progress{}},
		{name: "JSON null as text is no records", raw: "null"},
		{name: "a record in Kopf's format reads field by field", raw: `{"flaky_fn":` + kopfRecord + `}`,
			want: map[string]*state.Progress{"flaky_fn": {Reason: handlers.ReasonCreate, Started: time.Date(2026, 11, 23, 3, 8, 19, 302326000, time.UTC), Delayed: ptrTime(time.Date(2026, 11, 23, 3, 18, 19, 526537000, time.UTC)), Retries: 1, Message: "not yet"}}},
		{name: "a single Kopf record is not a map of records", raw: kopfRecord, bad: true},
		{name: "a list", raw: []any{map[string]any{"purpose": "create"}}, bad: true},
		{name: "a list as JSON text", raw: `[{"purpose":"create"}]`, bad: true},
		{name: "a string that is not JSON", raw: "progress", bad: true},
		{name: "an empty string", raw: "", bad: true},
		{name: "truncated JSON text", raw: `{"a":{"purpose":"create","started":"2026-11-23T03:08:19.302313Z"`, bad: true},
		{name: "a number", raw: 42.0, bad: true},
		{name: "a boolean", raw: true, bad: true},
		{name: "a null record", raw: map[string]any{"a": nil}, bad: true},
		{name: "a null record as JSON text", raw: `{"a":null}`, bad: true},
		{name: "a record that is a string", raw: map[string]any{"a": "done"}, bad: true},
		{name: "a record that is a list", raw: map[string]any{"a": []any{}}, bad: true},
		{name: "retries as a string", raw: map[string]any{"a": map[string]any{"retries": "3"}}, bad: true},
		{name: "retries as a fraction", raw: map[string]any{"a": map[string]any{"retries": 1.5}}, bad: true},
		{name: "retries beyond an int", raw: map[string]any{"a": map[string]any{"retries": 1e30}}, bad: true},
		{name: "success as a string", raw: map[string]any{"a": map[string]any{"success": "true"}}, bad: true},
		{name: "purpose as a number", raw: map[string]any{"a": map[string]any{"purpose": 1.0}}, bad: true},
		{name: "started that is not a time", raw: map[string]any{"a": map[string]any{"started": "yesterday"}}, bad: true},
		{name: "started as a number", raw: map[string]any{"a": map[string]any{"started": 1700000000.0}}, bad: true},
		{name: "delayed that is not a time", raw: map[string]any{"a": map[string]any{"delayed": "soon"}}, bad: true},
		{name: "a value JSON cannot encode", raw: map[string]any{"a": math.Inf(1)}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := state.DecodeProgress(tc.raw, where)
			if tc.bad {
				if err == nil {
					t.Fatalf("decodeProgress = %v, want an error", got)
				}
				if !strings.Contains(err.Error(), where) {
					t.Errorf("the error %q does not name %q", err, where)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeProgress: %v", err)
			}
			if (&state.State{Progress: got}).Encode() != (&state.State{Progress: tc.want}).Encode() || (got == nil) != (tc.want == nil) {
				t.Errorf("decodeProgress =\n %s\nwant\n %s", (&state.State{Progress: got}).Encode(), (&state.State{Progress: tc.want}).Encode())
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
