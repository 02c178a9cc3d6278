package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

// kopfObjects reads the objects Kopf 1.44.6 left behind (see
// testdata/kopf-state/README.md), by file name.
func kopfObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob("testdata/kopf-state/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no objects in testdata/kopf-state")
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = obj
	}
	return out
}

// kopfAnnotations returns the annotations Kopf wrote on obj.
func kopfAnnotations(obj map[string]any) map[string]any {
	out := map[string]any{}
	annotations, _ := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	for k, v := range annotations {
		if strings.HasPrefix(k, "kopf.zalando.org/") {
			out[k] = v
		}
	}
	return out
}

func TestObjectsHandledByKopfCarryNoStateOfGopfs(t *testing.T) {
	for name, obj := range kopfObjects(t) {
		if len(kopfAnnotations(obj)) == 0 {
			t.Fatalf("%s has no Kopf annotations; the test would prove nothing", name)
		}
		for _, s := range storages {
			t.Run(name+"/"+s.Where(), func(t *testing.T) {
				got, err := s.Load(obj)
				if err != nil || got != nil {
					t.Errorf("load = %s, %v; want nothing stored, so that gopf handles the object as new", got.Encode(), err)
				}
			})
		}
	}
}

func TestKopfResultsInStatusAreNotStateEvenInAFieldOfTheSameName(t *testing.T) {
	// A status field chosen to collide with a Kopf handler's id holds that
	// handler's result, which has neither lastHandled nor progress.
	for name, obj := range kopfObjects(t) {
		status, _ := obj["status"].(map[string]any)
		for field := range status {
			t.Run(name+"/status."+field, func(t *testing.T) {
				got, err := state.StatusStorage{Field: field}.Load(obj)
				if err != nil || got != nil {
					t.Errorf("load = %s, %v; want nothing stored", got.Encode(), err)
				}
			})
		}
	}
}

func TestSavingOnAnObjectHandledByKopfLeavesKopfsStateAlone(t *testing.T) {
	st := &state.State{Essence: `{"spec":{"field":"a"}}`, Progress: map[string]*state.Progress{
		"create_fn": {Reason: handlers.ReasonCreate, Started: started, Retries: 1, Success: true, Handled: `{"spec":{"field":"a"}}`},
	}}
	for name, obj := range kopfObjects(t) {
		for _, s := range storages {
			t.Run(name+"/"+s.Where(), func(t *testing.T) {
				after := saveAndApply(t, s, obj, st)
				checkLoads(t, s, after, st)
				if got, want := withoutState(s, after), withoutState(s, obj); !reflect.DeepEqual(got, want) {
					t.Errorf("saving changed more than gopf's state:\n %v\nwant\n %v", got, want)
				}
				if got, want := kopfAnnotations(after), kopfAnnotations(obj); !reflect.DeepEqual(got, want) {
					t.Errorf("Kopf's annotations changed:\n %v\nwant\n %v", got, want)
				}
			})
		}
	}
}

func TestKopfsStateIsNotPartOfTheEssence(t *testing.T) {
	// Kopf's annotations are Kopf's state, not the object's: the essence
	// leaves them out, as Kopf's own does, so that gopf compares with what
	// Kopf stored and takes neither operator's bookkeeping for a change.
	obj := kopfObjects(t)["kopfexample-flaky.yaml"]
	if obj == nil {
		t.Fatal("kopfexample-flaky.yaml is missing")
	}
	withForeign := state.DeepCopyJSON(obj).(map[string]any)
	withForeign["metadata"].(map[string]any)["annotations"].(map[string]any)["example.com/owner"] = "team-a"
	e := state.Essence(withForeign, "gopf.dev", nil)
	annotations, _ := e["metadata"].(map[string]any)["annotations"].(map[string]any)
	if want := map[string]any{"example.com/owner": "team-a"}; !reflect.DeepEqual(annotations, want) {
		t.Errorf("essence annotations =\n %v\nwant only the foreign one\n %v", annotations, want)
	}
	if _, ok := e["status"]; ok {
		t.Error("the essence keeps Kopf's results in status")
	}
	if got, want := e["metadata"].(map[string]any)["labels"], map[string]any{"flaky": "yes"}; !reflect.DeepEqual(got, want) {
		t.Errorf("essence labels = %v, want %v", got, want)
	}
}

func TestKopfMarkedPrefixesAreTheOnesKopfLeavesOutOfItsEssence(t *testing.T) {
	annotations := map[string]any{
		"kopf.zalando.org/x": "", "team.kopf.zalando.org/x": "", "kopf.example.com/x": "",
		"ops.example.com/kopf-managed": "yes", "ops.example.com/create_fn": "",
		"example.com/x": "", "notkopf.zalando.org.evil/x": "", "plain": "",
	}
	want := map[string]bool{"kopf.zalando.org": true, "team.kopf.zalando.org": true, "kopf.example.com": true, "ops.example.com": true}
	if got := state.KopfMarked(annotations); !reflect.DeepEqual(got, want) {
		t.Errorf("kopfMarked = %v, want %v", got, want)
	}
}

func TestKopfProgressRecordsReadFieldByFieldButNotAsGopfsProgress(t *testing.T) {
	obj := kopfObjects(t)["kopfexample-flaky.yaml"]
	record, _ := kopfAnnotations(obj)["kopf.zalando.org/flaky_fn"].(string)
	if record == "" {
		t.Fatal("kopfexample-flaky.yaml has no progress record for flaky_fn")
	}
	// Under gopf's progress annotation, one Kopf record is unreadable
	// state, never a map of records.
	s := state.AnnotationStorage{Prefix: "gopf.dev"}
	withRecord := map[string]any{"metadata": map[string]any{"annotations": map[string]any{s.ProgressKey(): record}}}
	if got, err := s.Load(withRecord); err == nil {
		t.Errorf("a Kopf record under %s loads as %s", s.ProgressKey(), got.Encode())
	}
	// As one record of a map, it reads: gopf's records use Kopf's field
	// names, and fields gopf does not know (stopped) are ignored.
	recs, err := state.DecodeProgress(`{"flaky_fn":`+record+`}`, "test")
	if err != nil {
		t.Fatalf("decodeProgress: %v", err)
	}
	rec := recs["flaky_fn"]
	if rec.Reason != handlers.ReasonCreate || rec.Retries != 1 || rec.Finished() || rec.Delayed == nil || rec.Message != "not yet" {
		t.Errorf("record = %+v", rec)
	}
}
