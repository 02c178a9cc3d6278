package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// The two places gopf keeps its state, with their default names.
var storages = []state.Storage{state.StatusStorage{Field: "gopf"}, state.AnnotationStorage{Prefix: "gopf.dev"}}

// someObject is an object with everything around gopf's state that must
// survive a save: foreign and Kopf annotations, labels, handler results.
const someObject = `{"apiVersion":"kopf.dev/v1","kind":"KopfExample",
	"metadata":{"name":"x","namespace":"ns","labels":{"app":"a"},"finalizers":["gopf.dev/finalizer"],
		"annotations":{"other":"kept","kopf.zalando.org/last-handled-configuration":"{\"spec\":{}}\n","gopf.devious/x":"kept"}},
	"spec":{"field":"a"},
	"status":{"create_fn":{"message":"hello"},"phase":"Running"}}`

// states are the states a round trip must keep, by name; nil is nothing.
func states() []struct {
	name string
	st   *state.State
} {
	const e1, e2 = `{"spec":{"field":"a"}}`, `{"metadata":{"labels":{"app":"a"}},"spec":{"field":"b","items":["x"]}}`
	return []struct {
		name string
		st   *state.State
	}{
		{"nothing", nil},
		{"an essence only", &state.State{Essence: e1}},
		{"another essence", &state.State{Essence: e2}},
		{"progress of an unfinished create", &state.State{Progress: map[string]*state.Progress{
			"create_fn": {Reason: handlers.ReasonCreate, Started: started, Delayed: &later, Retries: 1, Message: "not yet"},
			"other_fn":  {Reason: handlers.ReasonCreate, Started: started, Retries: 1, Success: true, Handled: e1},
		}}},
		{"the same create, one record gone and one changed", &state.State{Progress: map[string]*state.Progress{
			"create_fn": {Reason: handlers.ReasonCreate, Started: started, Retries: 2, Failure: true, Message: "gave up", Handled: e1},
		}}},
		{"an essence with progress of an update", &state.State{Essence: e1, Progress: map[string]*state.Progress{
			"update_fn":           {Reason: handlers.ReasonUpdate, Started: started, Retries: 3, Success: true, Handled: e2},
			"field_fn/spec.field": {Reason: handlers.ReasonUpdate, Started: started, Delayed: &later, Retries: 1, Message: "line one\nline <two> & \"three\" – ü"},
			"parent/child":        {Reason: handlers.ReasonUpdate, Started: later},
		}}},
		{"an essence with characters JSON escapes", &state.State{Essence: `{"spec":{"html":"<a href=\"x\">&</a>","nl":"a\nb","u":"ü","e":"\u00e9"}}`}},
	}
}

// applySaved sends what save put in p to obj the way gopf sends it, as JSON
// merge patches (status to the status subresource, the rest to the object),
// and returns the object as the API server would return it.
func applySaved(t *testing.T, obj map[string]any, p *spec.Patch) map[string]any {
	t.Helper()
	out := state.DeepCopyJSON(obj).(map[string]any)
	var patches []map[string]any
	if s := spec.StatusPatch(p); len(s) > 0 {
		patches = append(patches, map[string]any{"status": s})
	}
	if o := spec.ObjectPatch(p); len(o) > 0 {
		patches = append(patches, o)
	}
	for _, patch := range patches {
		data, err := state.Marshal(patch)
		if err != nil {
			t.Fatalf("the patch cannot be sent: %v", err)
		}
		state.ApplyMergePatch(out, fromJSON(t, string(data)))
	}
	return out
}

// saveAndApply saves st on obj through s and returns the object with the
// patch applied.
func saveAndApply(t *testing.T, s state.Storage, obj map[string]any, st *state.State) map[string]any {
	t.Helper()
	if st == nil {
		st = &state.State{}
	}
	var p spec.Patch
	if err := s.Save(&p, obj, st); err != nil {
		t.Fatalf("save: %v", err)
	}
	return applySaved(t, obj, &p)
}

// withoutState returns obj without the place where s keeps the state.
func withoutState(s state.Storage, obj map[string]any) map[string]any {
	out := state.DeepCopyJSON(obj).(map[string]any)
	switch s := s.(type) {
	case state.StatusStorage:
		if status, ok := out["status"].(map[string]any); ok {
			delete(status, s.Field)
			if len(status) == 0 {
				delete(out, "status") // created for the state alone
			}
		}
	case state.AnnotationStorage:
		if meta, ok := out["metadata"].(map[string]any); ok {
			if annotations, ok := meta["annotations"].(map[string]any); ok {
				delete(annotations, s.EssenceKey())
				delete(annotations, s.ProgressKey())
			}
		}
	}
	return out
}

// checkLoads fails the test unless s loads want (nil: nothing) from obj.
func checkLoads(t *testing.T, s state.Storage, obj map[string]any, want *state.State) {
	t.Helper()
	got, err := s.Load(obj)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if want == nil || want.Encode() == "{}" {
		if got != nil {
			t.Errorf("load = %s, want nothing", got.Encode())
		}
		return
	}
	if got.Encode() != want.Encode() {
		t.Errorf("load =\n %s\nwant\n %s", got.Encode(), want.Encode())
	}
}

func TestStorageReadsBackEveryStateItSaves(t *testing.T) {
	for _, s := range storages {
		for _, from := range states() {
			for _, to := range states() {
				t.Run(s.Where()+"/from "+from.name+" to "+to.name, func(t *testing.T) {
					obj := saveAndApply(t, s, fromJSON(t, someObject), from.st)
					checkLoads(t, s, obj, from.st)
					after := saveAndApply(t, s, obj, to.st)
					checkLoads(t, s, after, to.st)
					if to.st != nil && !state.Saved(s, after, to.st) {
						t.Errorf("saved() says the object does not carry %s", to.st.Encode())
					}
					if got, want := withoutState(s, after), withoutState(s, fromJSON(t, someObject)); !reflect.DeepEqual(got, want) {
						t.Errorf("saving changed more than gopf's state:\n %v\nwant\n %v", got, want)
					}
				})
			}
		}
	}
}

func TestStorageReadsTheDocumentedStoredForm(t *testing.T) {
	want := &state.State{Essence: `{"spec":{"field":"a"}}`, Progress: map[string]*state.Progress{
		"create_fn": {Reason: handlers.ReasonCreate, Started: started, Delayed: &later, Retries: 1, Message: "not yet"},
	}}
	const record = `{"purpose":"create","started":"2026-11-23T03:08:19.302313Z","delayed":"2026-11-23T03:18:19.302313Z","retries":1,"message":"not yet"}`
	for _, tc := range []struct {
		s   state.Storage
		obj string
	}{
		{state.StatusStorage{Field: "gopf"}, `{"status":{"gopf":{"lastHandled":"{\"spec\":{\"field\":\"a\"}}","progress":{"create_fn":` + record + `}}}}`},
		{state.StatusStorage{Field: "state"}, `{"status":{"state":{"lastHandled":"{\"spec\":{\"field\":\"a\"}}","progress":{"create_fn":` + record + `}}}}`},
		{state.AnnotationStorage{Prefix: "gopf.dev"}, `{"metadata":{"annotations":{
			"gopf.dev/last-handled-configuration":"{\"spec\":{\"field\":\"a\"}}",
			"gopf.dev/progress":` + quoteJSON(t, `{"create_fn":`+record+`}`) + `}}}`},
		{state.AnnotationStorage{Prefix: "example.com"}, `{"metadata":{"annotations":{
			"example.com/last-handled-configuration":"{\"spec\":{\"field\":\"a\"}}",
			"example.com/progress":` + quoteJSON(t, `{"create_fn":`+record+`}`) + `}}}`},
	} {
		t.Run(tc.s.Where(), func(t *testing.T) {
			checkLoads(t, tc.s, fromJSON(t, tc.obj), want)
		})
	}
}

func quoteJSON(t *testing.T, s string) string {
	t.Helper()
	data, err := state.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestStorageFindsNothingWhereNothingOfGopfsIsStored(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
	}{
		{"an empty object", `{}`},
		{"an object without status or annotations", `{"metadata":{"name":"x"},"spec":{}}`},
		{"a status and annotations without gopf's state", `{"metadata":{"annotations":{"a":"b"}},"status":{"phase":"x"}}`},
		{"state of another prefix and status field", `{"metadata":{"annotations":{"example.com/last-handled-configuration":"{}","example.com/progress":"{}"}},"status":{"state":{"lastHandled":"{}"}}}`},
		{"a null in gopf's status field", `{"status":{"gopf":null}}`},
		{"an empty object in gopf's status field", `{"status":{"gopf":{}}}`},
		{"nulls in gopf's status field", `{"status":{"gopf":{"lastHandled":null,"progress":null}}}`},
		{"an empty progress map", `{"metadata":{"annotations":{"gopf.dev/progress":"{}"}},"status":{"gopf":{"progress":{}}}}`},
		{"a null progress annotation", `{"metadata":{"annotations":{"gopf.dev/progress":"null"}}}`},
		{"status that is not an object", `{"status":"weird"}`},
		{"metadata that is not an object", `{"metadata":"weird"}`},
		{"annotations that are not an object", `{"metadata":{"annotations":["weird"]}}`},
		{"unknown fields next to gopf's state", `{"status":{"gopf":{"note":"x"}}}`},
	} {
		for _, s := range storages {
			t.Run(s.Where()+"/"+tc.name, func(t *testing.T) {
				checkLoads(t, s, fromJSON(t, tc.obj), nil)
			})
		}
	}
}

// unreadable are stored states that cannot be read, by storage: each must
// be an error naming the place, never a panic, and never mistaken for
// nothing stored.
var unreadable = map[string][]struct{ name, obj string }{
	"status.gopf": {
		{"the field is a string", `{"status":{"gopf":"lastHandled"}}`},
		{"the field is a list", `{"status":{"gopf":[{"lastHandled":"{}"}]}}`},
		{"the field is a number", `{"status":{"gopf":1}}`},
		{"the essence is a number", `{"status":{"gopf":{"lastHandled":1}}}`},
		{"the essence is an object, not JSON text", `{"status":{"gopf":{"lastHandled":{"spec":{}}}}}`},
		{"the essence is truncated", `{"status":{"gopf":{"lastHandled":"{\"spec\":{\"field\":"}}}`},
		{"the essence is a JSON list", `{"status":{"gopf":{"lastHandled":"[1]"}}}`},
		{"the essence is a JSON string", `{"status":{"gopf":{"lastHandled":"\"spec\""}}}`},
		{"the essence is JSON null", `{"status":{"gopf":{"lastHandled":"null"}}}`},
		{"the essence is empty", `{"status":{"gopf":{"lastHandled":""}}}`},
		{"the progress is a list", `{"status":{"gopf":{"progress":[{"purpose":"create"}]}}}`},
		{"the progress is a string", `{"status":{"gopf":{"progress":"create_fn"}}}`},
		{"the progress is truncated JSON text", `{"status":{"gopf":{"progress":"{\"a\":{\"purpose\":"}}}`},
		{"a record is null", `{"status":{"gopf":{"progress":{"create_fn":null}}}}`},
		{"a record is a string", `{"status":{"gopf":{"progress":{"create_fn":"done"}}}}`},
		{"a record has a string for a number", `{"status":{"gopf":{"progress":{"create_fn":{"purpose":"create","retries":"1"}}}}}`},
		{"a record has a string for a boolean", `{"status":{"gopf":{"progress":{"create_fn":{"purpose":"create","success":"yes"}}}}}`},
		{"a record has a number for a time", `{"status":{"gopf":{"progress":{"create_fn":{"purpose":"create","started":1}}}}}`},
		{"one good record and one bad", `{"status":{"gopf":{"progress":{"other_fn":{"purpose":"create"},"create_fn":{"delayed":"soon"}}}}}`},
		{"a good essence with bad progress", `{"status":{"gopf":{"lastHandled":"{}","progress":[]}}}`},
	},
	"annotations gopf.dev/*": {
		{"the essence is truncated", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{\"spec\":{\"field\":"}}}`},
		{"the essence is a JSON list", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"[]"}}}`},
		{"the essence is not JSON", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"spec: {}"}}}`},
		{"the essence is JSON null", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"null"}}}`},
		{"the essence is empty", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":""}}}`},
		{"the essence is not a string", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":1}}}`},
		{"the progress is truncated", `{"metadata":{"annotations":{"gopf.dev/progress":"{\"a\":{\"purpose\":\"create\""}}}`},
		{"the progress is a JSON list", `{"metadata":{"annotations":{"gopf.dev/progress":"[]"}}}`},
		{"the progress is a JSON string", `{"metadata":{"annotations":{"gopf.dev/progress":"\"create_fn\""}}}`},
		{"the progress is not JSON", `{"metadata":{"annotations":{"gopf.dev/progress":"create_fn"}}}`},
		{"the progress is empty", `{"metadata":{"annotations":{"gopf.dev/progress":""}}}`},
		{"the progress is one Kopf record, not a map of records", `{"metadata":{"annotations":{"gopf.dev/progress":"{\"started\":\"2026-11-23T03:08:19.302326+00:00\",\"purpose\":\"create\",\"retries\":1,\"success\":false,\"failure\":false}"}}}`},
		{"a record is null", `{"metadata":{"annotations":{"gopf.dev/progress":"{\"a\":null}"}}}`},
		{"a record has a string for a number", `{"metadata":{"annotations":{"gopf.dev/progress":"{\"a\":{\"retries\":\"1\"}}"}}}`},
		{"a good essence with bad progress", `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{}","gopf.dev/progress":"[]"}}}`},
	},
}

func TestStorageReportsUnreadableStateAsAnErrorNamingThePlace(t *testing.T) {
	for _, s := range storages {
		cases := unreadable[s.Where()]
		if len(cases) == 0 {
			t.Fatalf("no cases for %s", s.Where())
		}
		for _, tc := range cases {
			t.Run(s.Where()+"/"+tc.name, func(t *testing.T) {
				got, err := s.Load(fromJSON(t, tc.obj))
				if err == nil {
					t.Fatalf("load = %s, want an error", got.Encode())
				}
				if got != nil {
					t.Errorf("load returned a state with its error: %s", got.Encode())
				}
				if place := placeOf(s); !strings.Contains(err.Error(), place) {
					t.Errorf("the error %q does not name %q", err, place)
				}
			})
		}
	}
}

// placeOf is how errors name the place where s keeps the state.
func placeOf(s state.Storage) string {
	if a, ok := s.(state.AnnotationStorage); ok {
		return "annotation " + a.Prefix + "/"
	}
	return s.Where()
}

func TestStorageReplacesUnreadableStateWhole(t *testing.T) {
	for _, s := range storages {
		for _, tc := range unreadable[s.Where()] {
			for _, to := range states() {
				t.Run(s.Where()+"/"+tc.name+"/to "+to.name, func(t *testing.T) {
					obj := fromJSON(t, tc.obj)
					checkLoads(t, s, saveAndApply(t, s, obj, to.st), to.st)
				})
			}
		}
	}
}

func TestSavedTellsWhetherTheObjectCarriesTheState(t *testing.T) {
	essenceOnly := &state.State{Essence: `{"spec":{}}`}
	withProgress := &state.State{Essence: `{"spec":{}}`, Progress: map[string]*state.Progress{"a": {Reason: handlers.ReasonUpdate, Started: started}}}
	for _, s := range storages {
		stored := saveAndApply(t, s, fromJSON(t, someObject), withProgress)
		for _, tc := range []struct {
			name string
			obj  map[string]any
			st   *state.State
			want bool
		}{
			{"the state it carries", stored, withProgress, true},
			{"a copy of the state it carries", stored, withProgress.Clone(), true},
			{"the same essence without the progress", stored, essenceOnly, false},
			{"a record that differs in one field", stored, func() *state.State {
				c := withProgress.Clone()
				c.Progress["a"].Retries = 1
				return c
			}(), false},
			{"nothing, on an object that carries state", stored, nil, false},
			{"nothing, on an object that carries nothing", fromJSON(t, someObject), nil, true},
			{"a state, on an object that carries nothing", fromJSON(t, someObject), essenceOnly, false},
			{"nothing, on unreadable state", fromJSON(t, unreadable[s.Where()][0].obj), nil, false},
		} {
			t.Run(s.Where()+"/"+tc.name, func(t *testing.T) {
				if got := state.Saved(s, tc.obj, tc.st); got != tc.want {
					t.Errorf("saved = %v, want %v", got, tc.want)
				}
			})
		}
	}
}

func TestSavedCountsAnEmptyStateAsNothingStored(t *testing.T) {
	// An empty state is what save leaves when a cause's progress goes
	// without an essence (a delete with no delete handlers over an
	// unfinished create); the engine then remembers it as its last write,
	// and memory.consistencyWait asks saved whether the cache shows it.
	for _, s := range storages {
		t.Run(s.Where(), func(t *testing.T) {
			stored := saveAndApply(t, s, fromJSON(t, someObject), &state.State{Progress: map[string]*state.Progress{
				"create_fn": {Reason: handlers.ReasonCreate, Started: started, Delayed: &later, Retries: 1},
			}})
			emptied := saveAndApply(t, s, stored, &state.State{})
			checkLoads(t, s, emptied, nil)
			if !state.Saved(s, emptied, &state.State{}) {
				t.Error("saved = false for an empty state on an object that carries nothing: the next reconcile waits for the cache until ConsistencyTimeout")
			}
		})
	}
}

func TestStatusStorageWritesOnlyItsStatusField(t *testing.T) {
	s := state.StatusStorage{Field: "gopf"}
	rec := &state.Progress{Reason: handlers.ReasonCreate, Started: started, Retries: 1}
	recPatch := map[string]any{"purpose": "create", "started": "2026-11-23T03:08:19.302313Z", "retries": 1.0,
		"delayed": nil, "success": nil, "failure": nil, "message": nil, "handled": nil}
	for _, tc := range []struct {
		name   string
		stored string
		st     *state.State
		want   string // the status patch, as JSON
	}{{
		name: "an essence on an object without state",
		st:   &state.State{Essence: `{"spec":{}}`},
		want: `{"gopf":{"lastHandled":"{\"spec\":{}}"}}`,
	}, {
		name: "a record on an object without state, nulling the fields it lacks",
		st:   &state.State{Progress: map[string]*state.Progress{"a": rec}},
		want: `{"gopf":{"progress":{"a":` + string(mustJSON(t, recPatch)) + `}}}`,
	}, {
		name:   "records that go are nulled one by one",
		stored: `{"gopf":{"progress":{"a":{"purpose":"create"},"b":{"purpose":"create"}}}}`,
		st:     &state.State{Progress: map[string]*state.Progress{"a": rec}},
		want:   `{"gopf":{"progress":{"a":` + string(mustJSON(t, recPatch)) + `,"b":null}}}`,
	}, {
		name:   "a finished cause nulls the progress and sets the essence",
		stored: `{"gopf":{"progress":{"a":{"purpose":"create"}}}}`,
		st:     &state.State{Essence: `{}`},
		want:   `{"gopf":{"lastHandled":"{}","progress":null}}`,
	}, {
		name:   "an essence that goes is nulled",
		stored: `{"gopf":{"lastHandled":"{}"}}`,
		st:     &state.State{Progress: map[string]*state.Progress{"a": rec}},
		want:   `{"gopf":{"lastHandled":null,"progress":{"a":` + string(mustJSON(t, recPatch)) + `}}}`,
	}, {
		name:   "progress that is not a map is replaced",
		stored: `{"gopf":{"progress":["x"]}}`,
		st:     &state.State{Progress: map[string]*state.Progress{"a": rec}},
		want:   `{"gopf":{"progress":{"a":` + string(mustJSON(t, recPatch)) + `}}}`,
	}, {
		name:   "a field that is not an object is replaced",
		stored: `{"gopf":"x"}`,
		st:     &state.State{Essence: `{}`},
		want:   `{"gopf":{"lastHandled":"{}"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromJSON(t, someObject)
			if tc.stored != "" {
				status := obj["status"].(map[string]any)
				for k, v := range fromJSON(t, tc.stored) {
					status[k] = v
				}
			}
			var p spec.Patch
			if err := s.Save(&p, obj, tc.st); err != nil {
				t.Fatalf("save: %v", err)
			}
			if len(spec.ObjectPatch(&p)) != 0 {
				t.Errorf("save wrote outside status: %v", spec.ObjectPatch(&p))
			}
			if got := string(mustJSON(t, spec.StatusPatch(&p))); got != tc.want {
				t.Errorf("status patch =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestAnnotationStorageWritesOnlyItsTwoAnnotations(t *testing.T) {
	s := state.AnnotationStorage{Prefix: "gopf.dev"}
	rec := &state.Progress{Reason: handlers.ReasonCreate, Started: started, Retries: 1}
	recJSON := `{"a":{"purpose":"create","started":"2026-11-23T03:08:19.302313Z","retries":1}}`
	for _, tc := range []struct {
		name   string
		stored map[string]any // gopf's annotations on the object
		st     *state.State
		want   string // the object patch, as JSON
	}{{
		name: "an essence on an object without state leaves the progress unmentioned",
		st:   &state.State{Essence: `{"spec":{}}`},
		want: `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{\"spec\":{}}"}}}`,
	}, {
		name: "progress goes into one annotation as a JSON map of records",
		st:   &state.State{Progress: map[string]*state.Progress{"a": rec}},
		want: `{"metadata":{"annotations":{"gopf.dev/progress":` + quoteJSON(t, recJSON) + `}}}`,
	}, {
		name:   "a finished cause removes the progress annotation",
		stored: map[string]any{"gopf.dev/progress": recJSON},
		st:     &state.State{Essence: `{}`},
		want:   `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{}","gopf.dev/progress":null}}}`,
	}, {
		name:   "nothing to keep removes both",
		stored: map[string]any{"gopf.dev/progress": recJSON, "gopf.dev/last-handled-configuration": "{}"},
		st:     &state.State{},
		want:   `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":null,"gopf.dev/progress":null}}}`,
	}, {
		name:   "unreadable annotations are overwritten",
		stored: map[string]any{"gopf.dev/progress": "[", "gopf.dev/last-handled-configuration": "{"},
		st:     &state.State{Essence: `{}`, Progress: map[string]*state.Progress{"a": rec}},
		want:   `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{}","gopf.dev/progress":` + quoteJSON(t, recJSON) + `}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromJSON(t, someObject)
			annotations := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
			for k, v := range tc.stored {
				annotations[k] = v
			}
			var p spec.Patch
			if err := s.Save(&p, obj, tc.st); err != nil {
				t.Fatalf("save: %v", err)
			}
			if len(spec.StatusPatch(&p)) != 0 {
				t.Errorf("save wrote to status: %v", spec.StatusPatch(&p))
			}
			if got := string(mustJSON(t, spec.ObjectPatch(&p))); got != tc.want {
				t.Errorf("object patch =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestSaveAddsToThePatchItIsGiven(t *testing.T) {
	for _, s := range storages {
		t.Run(s.Where(), func(t *testing.T) {
			var p spec.Patch
			spec.MergeStatus(&p, "create_fn", map[string]any{"message": "hi"})
			p.SetLabel("handled", ptrString("yes"))
			st := &state.State{Essence: `{}`}
			if err := s.Save(&p, fromJSON(t, someObject), st); err != nil {
				t.Fatalf("save: %v", err)
			}
			obj := applySaved(t, fromJSON(t, someObject), &p)
			checkLoads(t, s, obj, st)
			if got := obj["status"].(map[string]any)["create_fn"]; !reflect.DeepEqual(got, map[string]any{"message": "hi"}) {
				t.Errorf("status.create_fn = %v, want the handler's result", got)
			}
			if got := obj["metadata"].(map[string]any)["labels"].(map[string]any)["handled"]; got != "yes" {
				t.Errorf("the handler's label = %v", got)
			}
		})
	}
}

func TestAnnotationStorageRefusesStateOverTheAnnotationsLimit(t *testing.T) {
	s := state.AnnotationStorage{Prefix: "gopf.dev"}
	// essenceOfSize returns an essence (a JSON object) of n bytes.
	essenceOfSize := func(n int) string {
		const frame = `{"s":""}`
		return `{"s":"` + strings.Repeat("x", n-len(frame)) + `"}`
	}
	foreign := map[string]any{"big": strings.Repeat("y", 100_000), "small": "z"}
	foreignSize := len("big") + 100_000 + len("small") + 1
	fits := state.MaxAnnotationsSize - foreignSize - len(s.EssenceKey())
	for _, tc := range []struct {
		name     string
		stored   map[string]any // gopf's annotations already there
		essence  int
		tooLarge bool
	}{
		{name: "exactly at the limit", essence: fits},
		{name: "one byte over", essence: fits + 1, tooLarge: true},
		{name: "far over", essence: state.MaxAnnotationsSize, tooLarge: true},
		{name: "gopf's own annotations being replaced do not count", essence: fits,
			stored: map[string]any{s.EssenceKey(): essenceOfSize(100_000), s.ProgressKey(): `{"a":{"message":"` + strings.Repeat("m", 50_000) + `"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{"metadata": map[string]any{"annotations": state.DeepCopyJSON(foreign)}}
			for k, v := range tc.stored {
				obj["metadata"].(map[string]any)["annotations"].(map[string]any)[k] = v
			}
			st := &state.State{Essence: essenceOfSize(tc.essence)}
			var p spec.Patch
			err := s.Save(&p, obj, st)
			if !tc.tooLarge {
				if err != nil {
					t.Fatalf("save: %v", err)
				}
				checkLoads(t, s, applySaved(t, obj, &p), st)
				return
			}
			if !errors.Is(err, state.ErrTooLarge) {
				t.Fatalf("save = %v, want errStateTooLarge", err)
			}
			if !p.Empty() {
				t.Errorf("a refused save still patched: %v", spec.ObjectPatch(&p))
			}
		})
	}
}

func TestStatusStorageIgnoresTheAnnotationsLimit(t *testing.T) {
	s := state.StatusStorage{Field: "gopf"}
	st := &state.State{Essence: `{"s":"` + strings.Repeat("x", state.MaxAnnotationsSize) + `"}`}
	obj := fromJSON(t, someObject)
	checkLoads(t, s, saveAndApply(t, s, obj, st), st)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := state.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func ptrString(s string) *string { return &s }
