package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/state"
)

func TestAProgressRecordReadsAsTheHandlersState(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Minute)
	for _, tc := range []struct {
		name string
		rec  state.Progress
		want HandlerState
		next *time.Time
	}{
		{"success", state.Progress{Success: true, Retries: 1}, HandlerDone, nil},
		{"failure", state.Progress{Failure: true, Retries: 3, Message: "no"}, HandlerFailed, nil},
		{"a retry later", state.Progress{Retries: 2, Delayed: &later}, HandlerRetrying, &later},
		{"a retry due", state.Progress{Retries: 2, Delayed: &earlier}, HandlerRetrying, nil},
		{"never called", state.Progress{}, HandlerPending, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.Reason, tc.rec.Started = handlers.ReasonCreate, earlier
			got := recordStatus("fn", &tc.rec, now)
			if got.State != tc.want || got.Attempts != tc.rec.Retries || got.Cause != "create" || !got.Started.Equal(earlier) {
				t.Errorf("got %+v, want state %s", got, tc.want)
			}
			if (got.NextAttempt == nil) != (tc.next == nil) || tc.next != nil && !got.NextAttempt.Equal(*tc.next) {
				t.Errorf("next attempt %v, want %v", got.NextAttempt, tc.next)
			}
		})
	}
}

func TestAHandlerIsDescribedOnOneLine(t *testing.T) {
	next := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    HandlerStatus
		want string
	}{
		{HandlerStatus{ID: "flaky_fn", State: HandlerRetrying, Attempts: 2, MaxAttempts: 5, NextAttempt: &next, Message: "boom\nat line 2"},
			`flaky_fn retrying (retry 2 of 4, next at 2026-01-02T03:04:05Z): "boom at line 2"`},
		{HandlerStatus{ID: "flaky_fn", State: HandlerRetrying, Attempts: 1}, `flaky_fn retrying (retry 1, due now)`},
		{HandlerStatus{ID: "bad_fn", State: HandlerFailed, Message: strings.Repeat("x", 100)}, `bad_fn failed: "` + strings.Repeat("x", maxCellMessage-1) + `…"`},
		{HandlerStatus{ID: "tick", State: HandlerRunning, Operator: "op-a"}, `tick running (on op-a)`},
		{HandlerStatus{ID: "create_fn", State: HandlerPending}, `create_fn pending`},
	} {
		if got := describeHandler(tc.h); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func sampleStatuses() []*ObjectStatus {
	next := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*ObjectStatus{
		{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Namespace: "default", Name: "a", State: "done", Handled: true,
			Handlers:   []HandlerStatus{{ID: "create_fn", State: HandlerDone}, {ID: "delete_fn", State: HandlerIdle}},
			Finalizers: []FinalizerStatus{{Name: "gopf.dev/finalizer", Owner: "gopf", Why: "gopf's: held for delete handler delete_fn"}},
			OnStart:    []Action{{Do: ActionNothing, Text: "nothing: every handler is done"}}},
		{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: "b", State: "retrying",
			Handlers: []HandlerStatus{{ID: "flaky_fn", State: HandlerRetrying, Attempts: 1, NextAttempt: &next,
				Message: `handler "flaky_fn" on KopfExample /b: boom`}},
			OnStart: []Action{{Do: ActionContinue, Handler: "flaky_fn", Retry: 1, Due: &next, Text: "continue flaky_fn (retry 1, due at 2026-01-02T03:04:05Z)"}}},
	}
}

func printAll(t *testing.T, format string, view View, statuses []*ObjectStatus) string {
	t.Helper()
	var b bytes.Buffer
	p, err := NewStatusPrinter(&b, format, view)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		if err := p.Print(st); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTheStatusTableHasALinePerObject(t *testing.T) {
	got := printAll(t, "", ViewStatus, sampleStatuses())
	want := `KIND         NAMESPACE  NAME  STATE     HANDLERS                                                           FINALIZERS
KopfExample  default    a     done      done: create_fn; idle: delete_fn                                   gopf.dev/finalizer
KopfExample  -          b     retrying  flaky_fn retrying (retry 1, next at 2026-01-02T03:04:05Z): "boom"  -
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	plan := printAll(t, "table", ViewPlan, sampleStatuses())
	if !strings.Contains(plan, "ON START\n") || !strings.Contains(plan, "retrying  continue flaky_fn (retry 1, due at 2026-01-02T03:04:05Z)\n") {
		t.Errorf("plan table:\n%s", plan)
	}
}

func TestTheJSONAndYAMLFormsAreOneListOfEveryDetail(t *testing.T) {
	type list struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Items      []ObjectStatus `json:"items"`
	}
	for _, format := range []string{"json", "yaml"} {
		out := printAll(t, format, ViewStatus, sampleStatuses())
		var got list
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(out), &got)
		} else {
			err = yaml.UnmarshalStrict([]byte(out), &got)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		if got.APIVersion != StatusAPIVersion || got.Kind != "ObjectStatusList" || len(got.Items) != 2 {
			t.Fatalf("%s: got %+v", format, got)
		}
		want := sampleStatuses()
		if g, w := string(planJSON(t, got.Items[1])), string(planJSON(t, want[1])); g != w {
			t.Errorf("%s: item read back as\n%s\nwant\n%s", format, g, w)
		}
		empty := printAll(t, format, ViewStatus, nil)
		var none list
		if format == "json" {
			err = json.Unmarshal([]byte(empty), &none)
		} else {
			err = yaml.UnmarshalStrict([]byte(empty), &none)
		}
		if err != nil || none.Kind != "ObjectStatusList" || len(none.Items) != 0 {
			t.Errorf("%s: no objects give %q (%v)", format, empty, err)
		}
	}
	if _, err := NewStatusPrinter(&bytes.Buffer{}, "wide", ViewStatus); err == nil || !strings.Contains(err.Error(), `not "wide"`) {
		t.Errorf("an unknown format: %v", err)
	}
}

func TestAKindIsFoundByAnyOfItsNames(t *testing.T) {
	pk := &plannedKind{desc: engine.Description{GVK: schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}},
		resource: schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}}
	for _, name := range []string{"KopfExample", "kopfexample", "kopfexamples", "kopfexamples.kopf.dev", "KopfExample.kopf.dev"} {
		if !pk.matches(name) {
			t.Errorf("%q does not name KopfExample", name)
		}
	}
	for _, name := range []string{"pods", "kopfexamples.example.com", "kopf"} {
		if pk.matches(name) {
			t.Errorf("%q names KopfExample", name)
		}
	}
}

func TestAHandlerFailedEventReadsAsAFailure(t *testing.T) {
	ev := map[string]any{
		"involvedObject": map[string]any{"uid": "u-1"},
		"message":        `handler "field_fn/spec.x" failed permanently: permanent error: no: "quoted"`,
		"eventTime":      "2026-01-02T03:04:05.000000Z",
		"series":         map[string]any{"lastObservedTime": "2026-01-02T03:09:05.000000Z"},
	}
	uid, f, ok := failureOf(ev)
	if !ok || uid != "u-1" || f.Handler != "field_fn/spec.x" || f.Message != `permanent error: no: "quoted"` ||
		!f.Time.Equal(time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)) {
		t.Errorf("got %q %+v %v", uid, f, ok)
	}
	ev["message"] = "something else"
	if _, _, ok := failureOf(ev); ok {
		t.Error("an Event of another shape is a failure")
	}
}

func TestAFailureConcernsOnlyTheStateWrittenWithIt(t *testing.T) {
	failed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		written *time.Time
		want    bool
	}{
		{nil, true},
		{timeRef(failed.Add(time.Second)), true},
		{timeRef(failed.Add(time.Hour)), false}, // a later cause was handled since
	} {
		pl := &objectPlan{out: &ObjectStatus{StateWritten: tc.written, Failures: []Failure{{Handler: "bad_fn", Time: failed}}}}
		if got := pl.lastFailure("bad_fn") != nil; got != tc.want {
			t.Errorf("state written %v: failure applies %v, want %v", tc.written, got, tc.want)
		}
		if pl.lastFailure("other_fn") != nil {
			t.Error("a failure of another handler applies")
		}
	}
}

// planJSON encodes v as gopf stores JSON, failing the test if it cannot.
func planJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := state.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// timeRef returns a pointer to t.
func timeRef(t time.Time) *time.Time { return &t }
