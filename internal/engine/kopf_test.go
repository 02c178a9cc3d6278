package engine

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// The handler ids of testdata/kopf-state/handlers.py, by kind.
var (
	kopfExampleIDs = []string{"create_fn", "update_fn", "field_fn/spec.field", "flaky_fn", "delete_fn"}
	kopfConfigIDs  = []string{"cm_create", "cm_delete"}
)

// newKopfStore is the Kopf store of a kind with the handlers ids, the
// essence computed as the engine does (with the field handler's field).
func newKopfStore(ids []string, log logr.Logger) *kopfstate.Store {
	s := &kopfstate.Store{Prefix: state.DefaultKopfPrefix, Log: log, EssenceOf: func(obj map[string]any) string {
		return essenceText(obj)
	}}
	for _, id := range ids {
		s.Known(id)
	}
	return s
}

func essenceText(obj map[string]any) string {
	data, _ := state.Marshal(state.Essence(obj, "gopf.dev", [][]string{{"spec", "field"}}))
	return string(data)
}

func idsFor(name string) []string {
	if strings.HasPrefix(name, "configmap") {
		return kopfConfigIDs
	}
	return kopfExampleIDs
}

func TestKopfsLastHandledEssenceIsTheEssenceGopfComputesForTheObject(t *testing.T) {
	for name, obj := range kopfObjects(t) {
		if name == "kopfexample-flaky.yaml" {
			continue // not handled yet
		}
		t.Run(name, func(t *testing.T) {
			layered := kopfstate.Fallback{Storage: state.StatusStorage{Field: "gopf"}, Kopf: newKopfStore(idsFor(name), logr.Discard())}
			for _, s := range []state.Storage{newKopfStore(idsFor(name), logr.Discard()), layered} {
				st, err := s.Load(obj)
				if err != nil || st == nil {
					t.Fatalf("%s: load = %v, %v", s.Where(), st, err)
				}
				if want := essenceText(obj); st.Essence != want {
					t.Errorf("%s: loaded essence\n %s\nwant the object's\n %s", s.Where(), st.Essence, want)
				}
			}
		})
	}
}

func TestKopfsProgressLoadsWithItsRetriesStartAndDelay(t *testing.T) {
	objs := kopfObjects(t)
	at := func(text string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	flaky, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(objs["kopfexample-flaky.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	current := essenceText(objs["kopfexample-flaky.yaml"])
	delayed := at("2026-11-23T03:18:19.526537Z")
	want := &state.State{Progress: map[string]*state.Progress{
		"create_fn":           {Reason: handlers.ReasonCreate, Started: at("2026-11-23T03:08:19.302313Z"), Retries: 1, Success: true, Handled: current},
		"field_fn/spec.field": {Reason: handlers.ReasonCreate, Started: at("2026-11-23T03:08:19.302321Z"), Retries: 1, Success: true, Handled: current},
		"flaky_fn":            {Reason: handlers.ReasonCreate, Started: at("2026-11-23T03:08:19.302326Z"), Delayed: &delayed, Retries: 1, Message: "not yet"},
	}}
	if flaky.Encode() != want.Encode() {
		t.Errorf("flaky loads as\n %s\nwant\n %s", flaky.Encode(), want.Encode())
	}
	deleting, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(objs["kopfexample-deleting.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	rec := deleting.Progress["delete_fn"]
	if rec == nil || rec.Reason != handlers.ReasonDelete || rec.Retries != 1 || rec.Finished() || rec.Delayed == nil ||
		rec.Message != "cannot delete yet" || deleting.Essence == "" {
		t.Errorf("deleting loads as %s", deleting.Encode())
	}
}

func TestAFinishedRecordInKopfsFormatIsReadBackForTheEssenceItFinishedOn(t *testing.T) {
	s := newKopfStore(kopfExampleIDs, logr.Discard())
	handled := `{"spec":{"field":"b"}}`
	st := &state.State{Essence: `{"spec":{"field":"a"}}`, Progress: map[string]*state.Progress{
		"update_fn":           {Reason: handlers.ReasonUpdate, Started: started, Retries: 1, Success: true, Handled: handled},
		"field_fn/spec.field": {Reason: handlers.ReasonUpdate, Started: started, Delayed: &later, Retries: 1, Message: "not yet"},
	}}
	saved := saveAndApply(t, s, fromJSON(t, `{"metadata":{"name":"x"},"spec":{"field":"b"}}`), st.Clone())
	// The object changes while the field handler retries.
	changed := state.DeepCopyJSON(saved).(map[string]any)
	changed["spec"] = map[string]any{"field": "c"}
	got, err := s.Load(changed)
	if err != nil {
		t.Fatal(err)
	}
	if rec := got.Progress["update_fn"]; rec == nil || rec.Handled != handled {
		t.Errorf("update_fn = %+v; want it finished on %s, not on the object as it is now (%s)", rec, handled, essenceText(changed))
	}
	checkLoads(t, s, saved, st)
	// Saving what was loaded writes nothing.
	var p spec.Patch
	if err := s.Save(&p, changed, got); err != nil {
		t.Fatal(err)
	}
	if o := spec.ObjectPatch(&p); len(o) > 0 {
		t.Errorf("saving the state as loaded patches %v", o)
	}
}

func TestFinishedRecordsInKopfsFormatLeaveTheEssenceOutWhereItWouldNotFit(t *testing.T) {
	s := newKopfStore(kopfExampleIDs, logr.Discard())
	big := strings.Repeat("x", 130<<10)
	obj := fromJSON(t, `{"metadata":{"name":"x"},"spec":{"field":"`+big+`"}}`)
	handled := essenceText(obj)
	st := &state.State{Essence: `{"spec":{"field":"a"}}`, Progress: map[string]*state.Progress{
		"update_fn":           {Reason: handlers.ReasonUpdate, Started: started, Retries: 1, Success: true, Handled: handled},
		"field_fn/spec.field": {Reason: handlers.ReasonUpdate, Started: started, Retries: 1, Success: true, Handled: handled},
		"flaky_fn":            {Reason: handlers.ReasonUpdate, Started: started, Delayed: &later, Retries: 1, Message: "not yet"},
	}}
	saved := saveAndApply(t, s, obj, st.Clone())
	size := 0
	for k, v := range kopfAnnotations(saved) {
		text, _ := v.(string)
		size += len(k) + len(text)
		if strings.Contains(text, `"handled"`) {
			t.Errorf("%s holds a copy of the essence: two of them would exceed Kubernetes' limit on annotations", k)
		}
	}
	if size > state.MaxAnnotationsSize {
		t.Errorf("the annotations take %d bytes, over the limit of %d", size, state.MaxAnnotationsSize)
	}
	// Read back as Kopf's own records: finished on the object as it is.
	checkLoads(t, s, saved, st)
}

func TestAFinishedRecordOfKopfsOwnIsTakenForTheObjectAsItIs(t *testing.T) {
	obj := fromJSON(t, `{"metadata":{"annotations":{
		"kopf.zalando.org/last-handled-configuration":"{\"spec\":{\"field\":\"a\"}}\n",
		"kopf.zalando.org/update_fn":"{\"started\":\"2026-11-23T03:08:19+00:00\",\"purpose\":\"update\",\"retries\":1,\"success\":true,\"failure\":false}"}},
		"spec":{"field":"c"}}`)
	st, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	// Kopf takes a change made while a cause is unfinished into that cause.
	if rec := st.Progress["update_fn"]; rec == nil || rec.Handled != essenceText(obj) {
		t.Errorf("update_fn = %+v; want it finished on the object as it is, %s", rec, essenceText(obj))
	}
}

func TestKopfProgressInStatusIsReadWhenNoAnnotationHoldsIt(t *testing.T) {
	obj := fromJSON(t, `{"metadata":{"annotations":{"kopf.zalando.org/create_fn":"{\"started\":\"2026-11-23T03:08:19+00:00\",\"retries\":2,\"success\":false,\"failure\":false}"}},
		"status":{"kopf":{"progress":{
			"create_fn":{"started":"2020-01-01T00:00:00","retries":9},
			"update_fn":{"started":"2026-11-23T03:08:19.5+00:00","retries":1,"success":true}}}}}`)
	st, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Progress["create_fn"]; got == nil || got.Retries != 2 {
		t.Errorf("create_fn = %+v; want the annotation's record (retries 2), read before status", got)
	}
	if got := st.Progress["update_fn"]; got == nil || !got.Success || got.Reason != handlers.ReasonCreate {
		t.Errorf("update_fn = %+v; want status's record, for the create cause (nothing handled yet)", got)
	}
}

func TestKopfProgressOnlyInStatusIsRead(t *testing.T) {
	obj := fromJSON(t, `{"metadata":{"annotations":{"other.example.com/x":"y"}},
		"status":{"kopf":{"progress":{"update_fn":{"started":"2026-11-23T03:08:19.5+00:00","retries":3}}}}}`)
	st, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Progress["update_fn"]; got == nil || got.Retries != 3 {
		t.Errorf("update_fn = %+v; want status's record (retries 3)", got)
	}
	if st, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(fromJSON(t, `{"metadata":{"annotations":{"kopf.zalando.orgx/y":"z"}},"status":{"kopf":{}}}`)); st != nil || err != nil {
		t.Errorf("an object with nothing of Kopf's loads as %+v, %v", st, err)
	}
}

func TestKopfRecordsOfSubHandlersAreFoundUnderTheirParent(t *testing.T) {
	obj := fromJSON(t, `{"metadata":{"annotations":{
		"kopf.zalando.org/create_fn.child.a":"{\"started\":\"2026-11-23T03:08:19+00:00\",\"purpose\":\"create\",\"retries\":1,\"success\":true,\"failure\":false}"}}}`)
	st, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Progress["create_fn/child.a"]; got == nil || !got.Success {
		t.Errorf("progress = %s; want create_fn/child.a succeeded", st.Encode())
	}
}

func TestKopfProgressOfAnUnknownHandlerIsLeftAloneWithOneWarning(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	obj := kopfObjects(t)["kopfexample-flaky.yaml"]
	s := newKopfStore([]string{"create_fn", "field_fn/spec.field"}, log) // no flaky_fn
	for range 3 {
		st, err := s.Load(obj)
		if err != nil || st == nil || st.Progress["flaky_fn"] != nil || len(st.Progress) != 2 {
			t.Fatalf("load = %s, %v", st.Encode(), err)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "kopf.zalando.org/flaky_fn") {
		t.Errorf("warnings = %q; want one naming kopf.zalando.org/flaky_fn", lines)
	}
	var p spec.Patch
	s.Purge(&p, obj)
	got := spec.ObjectPatch(&p)["metadata"].(map[string]any)["annotations"]
	want := map[string]any{"kopf.zalando.org/create_fn": nil, "kopf.zalando.org/field_fn.spec.field": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("purge patches %v; want the two known records removed and flaky_fn's kept", got)
	}
}

func TestBadKopfStateIsAnErrorNamingWhereItIs(t *testing.T) {
	for _, annotations := range []string{
		`{"kopf.zalando.org/last-handled-configuration":"not json"}`,
		`{"kopf.zalando.org/last-handled-configuration":"null"}`,
		`{"kopf.zalando.org/create_fn":"[1]"}`,
		`{"kopf.zalando.org/create_fn":"{\"started\":\"yesterday\"}"}`,
		`{"kopf.zalando.org/create_fn":"{\"success\":true,\"handled\":\"not json\"}"}`,
	} {
		obj := fromJSON(t, `{"metadata":{"annotations":`+annotations+`}}`)
		_, err := newKopfStore(kopfExampleIDs, logr.Discard()).Load(obj)
		if err == nil || !strings.Contains(err.Error(), "Kopf") {
			t.Errorf("%s: load error = %v", annotations, err)
		}
	}
}

// withoutKopf returns obj without Kopf's annotations and finalizer: the
// object before Kopf stored anything.
func withoutKopf(obj map[string]any) map[string]any {
	out := state.DeepCopyJSON(obj).(map[string]any)
	meta := out["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	for k := range annotations {
		if strings.HasPrefix(k, "kopf.zalando.org/") {
			delete(annotations, k)
		}
	}
	delete(meta, "finalizers")
	return out
}

func TestKopfFormatWritesTheAnnotationsKopfWrites(t *testing.T) {
	for name, obj := range kopfObjects(t) {
		t.Run(name, func(t *testing.T) {
			s := newKopfStore(idsFor(name), logr.Discard())
			st, err := s.Load(obj)
			if err != nil {
				t.Fatal(err)
			}
			after := saveAndApply(t, s, withoutKopf(obj), st.Clone())
			got, want := kopfAnnotations(after), kopfAnnotations(obj)
			for k, v := range got {
				// gopf's records of handlers that finished say on which
				// essence, after Kopf's fields; here, the object's.
				text, _ := v.(string)
				if i := strings.Index(text, `,"handled":`); i >= 0 {
					got[k] = text[:i] + "}"
					if handled := text[i+len(`,"handled":`) : len(text)-1]; handled != quoteJSON(t, essenceText(obj)) {
						t.Errorf("%s: the record says it finished on %s, want the object's essence", k, handled)
					}
				}
			}
			for k, v := range want {
				// Kopf's stopped times are when Kopf's handlers stopped;
				// gopf writes when its own do.
				text, _ := v.(string)
				if i := strings.Index(text, `"stopped":"`); i >= 0 {
					want[k] = text[:i] + text[i+len(`"stopped":"2026-11-23T03:08:19.327865+00:00",`):]
					g, _ := got[k].(string)
					if j := strings.Index(g, `"stopped":"`); j >= 0 {
						got[k] = g[:j] + g[j+len(`"stopped":"2026-11-23T03:08:19.327865+00:00",`):]
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("annotations written:\n %v\nKopf's:\n %v", got, want)
			}
			checkLoads(t, s, after, st)
			// Saving the state Kopf left, unchanged, writes nothing.
			var p spec.Patch
			if err := s.Save(&p, obj, st.Clone()); err != nil {
				t.Fatal(err)
			}
			if o := spec.ObjectPatch(&p); len(o) > 0 {
				t.Errorf("saving Kopf's own state over it patches %v", o)
			}
		})
	}
}

func TestAPrefixOfItsOwnIsMarkedAsKopfMarksIt(t *testing.T) {
	s := &kopfstate.Store{Prefix: "ops.example.com", EssenceOf: essenceText, Log: logr.Discard()}
	s.Known("create_fn")
	st := &state.State{Essence: `{"spec":{"field":"a"}}`}
	after := saveAndApply(t, s, fromJSON(t, `{"metadata":{"name":"x"},"spec":{"field":"a"}}`), st)
	annotations := after["metadata"].(map[string]any)["annotations"].(map[string]any)
	want := map[string]any{"ops.example.com/last-handled-configuration": "{\"spec\":{\"field\":\"a\"}}\n", "ops.example.com/kopf-managed": "yes"}
	if !reflect.DeepEqual(annotations, want) {
		t.Errorf("annotations = %v, want %v", annotations, want)
	}
	if e := essenceText(after); e != st.Essence {
		t.Errorf("the essence after saving is %s; gopf's own state changed it", e)
	}
}

func TestGopfsStorageTakesOverFromKopfObjectByObject(t *testing.T) {
	obj := kopfObjects(t)["kopfexample-flaky.yaml"]
	for _, base := range storages {
		t.Run(base.Where(), func(t *testing.T) {
			s := kopfstate.Fallback{Storage: base, Kopf: newKopfStore(kopfExampleIDs, logr.Discard())}
			st, err := s.Load(obj)
			if err != nil || st == nil {
				t.Fatalf("load = %v, %v", st, err)
			}
			st.Progress["flaky_fn"].Retries = 2
			after := saveAndApply(t, s, obj, st)
			if left := kopfAnnotations(after); len(left) != 0 {
				t.Errorf("Kopf's state is still there after gopf stored its own: %v", left)
			}
			checkLoads(t, s, after, st)
			checkLoads(t, base, after, st)
			if got := after["metadata"].(map[string]any)["finalizers"]; !reflect.DeepEqual(got, []any{state.DefaultKopfFinalizer}) {
				t.Errorf("finalizers = %v; Kopf's stays until the delete handlers ran", got)
			}
		})
	}
}

func TestKopfEssenceTextPutsMetadataLastAsKopfDoes(t *testing.T) {
	got, err := kopfstate.EssenceText(`{"data":{"k":"v"},"metadata":{"annotations":{"a":"1"},"labels":{"l":"x"},"name":"n"},"spec":{"b":1,"a":[1.5,"<&>"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"data\":{\"k\":\"v\"},\"spec\":{\"b\":1,\"a\":[1.5,\"<&>\"]},\"metadata\":{\"labels\":{\"l\":\"x\"},\"annotations\":{\"a\":\"1\"},\"name\":\"n\"}}\n"
	if got != want {
		t.Errorf("kopfEssenceText =\n %s\nwant\n %s", got, want)
	}
}

func TestKopfRecordsOfAReplicaSetOfADeploymentAreReadUnderTheirMarkedKeys(t *testing.T) {
	obj := fromJSON(t, `{"metadata":{"ownerReferences":[{"kind":"Deployment","name":"d"}],"annotations":{
		"kopf.zalando.org/last-handled-configuration-ofDRS":"{\"spec\":{}}\n",
		"kopf.zalando.org/last-handled-configuration":"{\"spec\":{\"from\":\"the Deployment\"}}\n"}},"spec":{}}`)
	var warnings []string
	s := newKopfStore(nil, funcr.New(func(_, args string) { warnings = append(warnings, args) }, funcr.Options{}))
	s.Kind = "ReplicaSet" // typed objects from the cache do not say their kind
	st, err := s.Load(obj)
	if err != nil || st == nil || st.Essence != `{"spec":{}}` {
		t.Errorf("load = %s, %v; want the ReplicaSet's own essence", st.Encode(), err)
	}
	if len(warnings) > 0 {
		t.Errorf("the Deployment's copy is taken for a record of an unknown handler: %q", warnings)
	}
}
