package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// FuzzStoredState feeds the state decoders what anyone with patch rights on
// an object can write there: a whole object, and an essence and a progress
// text placed where each storage looks for them. Whatever is stored, load
// never panics, and either reports an error or returns a state that save
// writes back so that load reads the same again. Saving any state over
// whatever is stored, readable or not, stores exactly that state.
//
// The seeds are the objects Kopf left behind (testdata/kopf-state), the
// states gopf itself writes, and the unreadable ones the unit tests list;
// crashers the fuzzer found are kept in testdata/fuzz/FuzzStoredState.
func FuzzStoredState(f *testing.F) {
	for _, obj := range kopfStateSeeds(f) {
		data, err := state.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		annotations, _ := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
		essence, _ := annotations["kopf.zalando.org/last-handled-configuration"].(string)
		var progress string
		for k, v := range annotations {
			if k != "kopf.zalando.org/last-handled-configuration" && strings.HasPrefix(k, "kopf.zalando.org/") {
				progress, _ = v.(string)
			}
		}
		f.Add(data, essence, progress)
	}
	for _, s := range storages {
		for _, st := range states() {
			obj := fromJSONSeed(f, someObject)
			var p spec.Patch
			if err := s.Save(&p, obj, orEmpty(st.st)); err != nil {
				f.Fatal(err)
			}
			saved, err := state.Marshal(applySavedSeed(f, obj, &p))
			if err != nil {
				f.Fatal(err)
			}
			progress := ""
			if st.st != nil && len(st.st.Progress) > 0 {
				text, _ := state.Marshal(st.st.Progress)
				progress = string(text)
			}
			f.Add(saved, orEmpty(st.st).Essence, progress)
		}
		for _, tc := range unreadable[s.Where()] {
			f.Add([]byte(tc.obj), "", "")
		}
	}
	f.Add([]byte(`{}`), `{"spec":{}}`, `{"a":{"purpose":"create","started":"2026-11-23T03:08:19.302313Z"}}`)
	f.Add([]byte(`null`), `[]`, `{"a":null}`)

	f.Fuzz(func(t *testing.T, object []byte, essence, progress string) {
		// DecodeProgress takes the progress as text (an annotation) and as
		// decoded JSON (status).
		for _, raw := range []any{progress, state.DecodeJSON(progress)} {
			if recs, err := state.DecodeProgress(raw, "the progress"); err == nil {
				for id, p := range recs {
					if p == nil {
						t.Errorf("decodeProgress(%q) returned a nil record for %q without an error", progress, id)
					}
				}
			}
		}

		var objects []map[string]any
		var obj map[string]any
		if utiljson.Unmarshal(object, &obj) == nil && obj != nil {
			objects = append(objects, obj)
		}
		// The two texts where the storages look for them: as annotations,
		// and in status.gopf with the progress as text and as JSON.
		objects = append(objects,
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				"gopf.dev/last-handled-configuration": essence, "gopf.dev/progress": progress}}},
			map[string]any{"status": map[string]any{"gopf": map[string]any{"lastHandled": essence, "progress": progress}}},
			map[string]any{"status": map[string]any{"gopf": map[string]any{"lastHandled": essence, "progress": state.DecodeJSON(progress)}}},
		)
		for _, obj := range objects {
			for _, s := range storages {
				checkStateRoundTrips(t, s, obj)
			}
		}
	})
}

// checkStateRoundTrips checks what FuzzStoredState promises for one object
// and one storage.
func checkStateRoundTrips(t *testing.T, s state.Storage, obj map[string]any) {
	t.Helper()
	before := state.DeepCopyJSON(obj)
	st, err := s.Load(obj)
	if !reflect.DeepEqual(obj, before) {
		t.Fatalf("%s: load changed the object", s.Where())
	}
	if err != nil {
		if st != nil {
			t.Errorf("%s: load returned a state with its error %v", s.Where(), err)
		}
		if !strings.Contains(err.Error(), placeOf(s)) {
			t.Errorf("%s: the error %q does not name the place", s.Where(), err)
		}
	} else if st != nil && st.Encode() == "{}" {
		t.Errorf("%s: load returned an empty state instead of nothing", s.Where())
	}
	if err == nil {
		// What load read, saved again, reads back the same.
		if back, ok := saveAndLoad(t, s, obj, st); ok && back.Encode() != st.Encode() {
			t.Errorf("%s: the state loaded from\n %s\ndoes not round-trip:\n loaded %s\n saved and loaded %s", s.Where(), mustText(obj), st.Encode(), back.Encode())
		}
	}
	// Any state saved over what is there, readable or not, reads back.
	for _, want := range []*state.State{nil, roundTripState} {
		if back, ok := saveAndLoad(t, s, obj, want); ok && back.Encode() != want.Encode() {
			t.Errorf("%s: saving %s over\n %s\nloads %s", s.Where(), want.Encode(), mustText(obj), back.Encode())
		}
	}
}

// roundTripState is a state with an essence, finished and unfinished records.
var roundTripState = &state.State{Essence: `{"spec":{"field":"a"}}`, Progress: map[string]*state.Progress{
	"create_fn": {Reason: "create", Started: started, Delayed: &later, Retries: 1, Message: "not yet"},
	"other_fn":  {Reason: "create", Started: started, Retries: 1, Success: true, Handled: `{"spec":{}}`},
}}

// saveAndLoad saves st on obj through s, applies the patch as the API server
// would, and loads the state from the result. ok is false when the state
// does not fit in the annotations, which save reports instead of trying.
func saveAndLoad(t *testing.T, s state.Storage, obj map[string]any, st *state.State) (*state.State, bool) {
	t.Helper()
	var p spec.Patch
	if err := s.Save(&p, obj, orEmpty(st)); errors.Is(err, state.ErrTooLarge) {
		return nil, false
	} else if err != nil {
		t.Fatalf("%s: save: %v", s.Where(), err)
	}
	back, err := s.Load(applySaved(t, obj, &p))
	if err != nil {
		t.Fatalf("%s: the saved state %s cannot be loaded from\n %s\n: %v", s.Where(), orEmpty(st).Encode(), mustText(obj), err)
	}
	return back, true
}

func orEmpty(st *state.State) *state.State {
	if st == nil {
		return &state.State{}
	}
	return st
}

func mustText(v any) string {
	data, err := state.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// kopfStateSeeds reads the objects of testdata/kopf-state for seeds.
func kopfStateSeeds(f *testing.F) []map[string]any {
	files, err := filepath.Glob("testdata/kopf-state/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no objects in testdata/kopf-state: %v", err)
	}
	var out []map[string]any
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		out = append(out, obj)
	}
	return out
}

func fromJSONSeed(f *testing.F, s string) map[string]any {
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		f.Fatal(err)
	}
	return m
}

// applySavedSeed is applySaved for building seeds.
func applySavedSeed(f *testing.F, obj map[string]any, p *spec.Patch) map[string]any {
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
			f.Fatal(err)
		}
		state.ApplyMergePatch(out, fromJSONSeed(f, string(data)))
	}
	return out
}
