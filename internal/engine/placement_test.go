package engine

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
	"github.com/gopf-dev/gopf/test/kinds"
)

// statusSchema is a CRD's openAPIV3Schema with the given status schema.
func statusSchema(status map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"spec":   map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
		"status": status,
	}}
}

func TestTheSchemaKeepsGopfsStateOnlyWhereStructuralPruningLeavesItWhole(t *testing.T) {
	preserve := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	typed := map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string"}}}
	declared := func(gopf map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string"}, "gopf": gopf}}
	}
	for _, tc := range []struct {
		name   string
		schema state.KindSchema
		keeps  bool
	}{
		{"a status that keeps unknown fields", state.KindSchema{Known: true, Crd: true, Root: statusSchema(preserve)}, true},
		{"a typed status", state.KindSchema{Known: true, Crd: true, Root: statusSchema(typed)}, false},
		{"a typed status declaring gopf's field as an open object", state.KindSchema{Known: true, Crd: true, Root: statusSchema(declared(preserve))}, true},
		{"a typed status declaring gopf's field with only lastHandled", state.KindSchema{Known: true, Crd: true, Root: statusSchema(declared(map[string]any{
			"type": "object", "properties": map[string]any{"lastHandled": map[string]any{"type": "string"}},
		}))}, false},
		{"a status with additionalProperties", state.KindSchema{Known: true, Crd: true, Root: statusSchema(map[string]any{
			"type": "object", "additionalProperties": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
		})}, true},
		{"a root that keeps unknown fields", state.KindSchema{Known: true, Crd: true, Root: preserve}, true},
		{"a built-in kind", state.KindSchema{Known: true}, false},
		{"a schema that could not be read", state.KindSchema{Why: "forbidden"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.schema.Keeps([]string{"status", "gopf"}, state.SampleState()); got != tc.keeps {
				t.Errorf("keeps = %v, want %v", got, tc.keeps)
			}
		})
	}
}

func TestTheGoTypeKeepsGopfsStateOnlyIfItHasRoomForIt(t *testing.T) {
	unstructuredWidget := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kinds.GroupVersion.WithKind("Widget"))
		return u
	}
	for _, tc := range []struct {
		name      string
		newObject func() client.Object
		keeps     bool
	}{
		{"KopfExample, whose status keeps unknown fields", func() client.Object { return &kopfv1.KopfExample{} }, true},
		{"a typed status, as kubebuilder scaffolds it", func() client.Object { return &kinds.Widget{} }, false},
		{"a Pod", func() client.Object { return &corev1.Pod{} }, false},
		{"a ConfigMap, which has no status", func() client.Object { return &corev1.ConfigMap{} }, false},
		{"an unstructured object", unstructuredWidget, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := state.TypeKeeps(tc.newObject, []string{"status", "gopf"}, state.SampleState()); got != tc.keeps {
				t.Errorf("typeKeeps = %v, want %v", got, tc.keeps)
			}
		})
	}
}

func TestDroppedStateAndResultsNameWhatDropsThem(t *testing.T) {
	phase := map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string"}}}
	typed := state.KindSchema{Known: true, Crd: true, Root: statusSchema(phase)}
	unstructuredWidget := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kinds.GroupVersion.WithKind("Widget"))
		return u
	}
	for _, tc := range []struct {
		name      string
		place     *state.StatusPlace
		stateWhy  string
		resultWhy string
	}{
		{"the Go type", state.NewStatusPlace(state.KindSchema{Why: "forbidden"}, func() client.Object { return &kinds.Widget{} }, "gopf"), "Go type *kinds.Widget", "Go type *kinds.Widget"},
		{"the CRD's schema", state.NewStatusPlace(typed, unstructuredWidget, "gopf"), "CRD's schema does not declare status.gopf", "CRD's schema does not declare status.create_fn"},
		{"a built-in kind", state.NewStatusPlace(state.KindSchema{Known: true}, func() client.Object { return &corev1.Pod{} }, "gopf"), "Go type *v1.Pod", "Go type *v1.Pod"},
		{"nothing", state.NewStatusPlace(state.KindSchema{Known: true, Crd: true}, func() client.Object { return &kopfv1.KopfExample{} }, "gopf"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.place.State, tc.stateWhy) || (tc.stateWhy == "") != tc.place.KeepsState() {
				t.Errorf("state: %q, want it to say %q", tc.place.State, tc.stateWhy)
			}
			if why := tc.place.ResultDrops("create_fn"); !strings.Contains(why, tc.resultWhy) || (tc.resultWhy == "") != (why == "") {
				t.Errorf("results: %q, want it to say %q", why, tc.resultWhy)
			}
		})
	}
}

func TestADroppedResultIsReportedOncePerHandler(t *testing.T) {
	p := state.NewStatusPlace(state.KindSchema{Known: true}, func() client.Object { return &corev1.Pod{} }, "gopf")
	if !p.FirstDrop("a") || p.FirstDrop("a") || !p.FirstDrop("b") {
		t.Error("firstDrop must say yes once per handler id")
	}
}

// object decodes a JSON object for the storage tests.
func object(t *testing.T, text string) map[string]any {
	t.Helper()
	m, ok := state.DecodeJSON(text).(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %s", text)
	}
	return m
}

func TestStateInGopfsOtherPlaceIsReadAndMovedByTheNextWrite(t *testing.T) {
	kopf := newKopfStore(nil, logr.Discard())
	inStatus, inAnnotations := state.StatusStorage{Field: "gopf"}, state.AnnotationStorage{Prefix: "gopf.dev"}
	st := &state.State{Essence: `{"spec":{"field":"a"}}`}
	newer := &state.State{Essence: `{"spec":{"field":"b"}}`}

	t.Run("from annotations to status", func(t *testing.T) {
		s := kopfstate.Fallback{Storage: inStatus, Other: inAnnotations, Kopf: kopf}
		obj := object(t, `{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{\"spec\":{\"field\":\"a\"}}"}},"spec":{"field":"a"}}`)
		if got, err := s.Load(obj); err != nil || !state.SameState(got, st) {
			t.Fatalf("load = %v, %v; the state in annotations must be found", got, err)
		}
		var p spec.Patch
		if err := s.Save(&p, obj, newer); err != nil {
			t.Fatal(err)
		}
		saved := state.ApplyMergePatch(obj, state.MergeInto(spec.ObjectPatch(&p), map[string]any{"status": spec.StatusPatch(&p)}))
		if got, _ := inStatus.Load(saved); !state.SameState(got, newer) {
			t.Errorf("status holds %v, want the new state", got)
		}
		if got, _ := inAnnotations.Load(saved); got != nil {
			t.Errorf("the annotations still hold %v; the write that moves the state removes them", got)
		}
	})

	t.Run("from status to annotations", func(t *testing.T) {
		s := kopfstate.Fallback{Storage: inAnnotations, Other: inStatus, Kopf: kopf}
		obj := object(t, `{"spec":{"field":"a"},"status":{"gopf":{"lastHandled":"{\"spec\":{\"field\":\"a\"}}"}}}`)
		if got, err := s.Load(obj); err != nil || !state.SameState(got, st) {
			t.Fatalf("load = %v, %v; the state in status must be found", got, err)
		}
		var p spec.Patch
		if err := s.Save(&p, obj, newer); err != nil {
			t.Fatal(err)
		}
		if len(spec.StatusPatch(&p)) > 0 {
			t.Errorf("the write that moves the state out of status also patches status (%v): sent first, it could lose the state", spec.StatusPatch(&p))
		}
		moved := state.ApplyMergePatch(obj, spec.ObjectPatch(&p))
		if got, _ := s.Load(moved); !state.SameState(got, newer) {
			t.Fatalf("load after the move = %v, want the new state", got)
		}
		// The next write, with the state in annotations, removes the copy.
		p = spec.Patch{}
		if err := s.Save(&p, moved, st); err != nil {
			t.Fatal(err)
		}
		if status := spec.StatusPatch(&p); len(status) != 1 || status["gopf"] != nil {
			t.Errorf("status patch %v, want status.gopf removed", status)
		}
	})
}

func TestUnreadableStateGivesWayToSoundStateElsewhere(t *testing.T) {
	kopf := newKopfStore([]string{"create_fn"}, logr.Discard())
	kopf.EssenceOf = func(map[string]any) string { return `{"spec":{"field":"a"}}` }
	s := kopfstate.Fallback{Storage: state.StatusStorage{Field: "gopf"}, Other: state.AnnotationStorage{Prefix: "gopf.dev"}, Kopf: kopf}
	obj := object(t, `{"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"{\"spec\":{\"field\":\"a\"}}\n"}},
		"spec":{"field":"a"},"status":{"gopf":{"lastHandled":"{truncated"}}}`)
	st, bad := state.LoadAll(s, obj)
	if bad == nil || !strings.Contains(bad.Error(), "status.gopf") {
		t.Errorf("the unreadable state is not reported: %v", bad)
	}
	if st == nil || st.Essence != `{"spec":{"field":"a"}}` {
		t.Errorf("state = %v, want Kopf's", st)
	}
	if got, err := s.Load(obj); err != nil || got == nil {
		t.Errorf("load = %v, %v; want Kopf's sound state", got, err)
	}
	delete(obj["metadata"].(map[string]any), "annotations")
	if got, err := s.Load(obj); err == nil || got != nil {
		t.Errorf("load = %v, %v; with nothing sound, the error", got, err)
	}
}

func TestAKeptPatchIsACopy(t *testing.T) {
	var p spec.Patch
	yes := "yes"
	p.SetLabel("a", &yes)
	p.SetStatus("phase", "Ready")
	kept := memory.ClonePatch(&p)
	spec.MergeStatus(&p, "create_fn", map[string]any{"done": true})
	p.SetAnnotation("gopf.dev/last-handled-configuration", &yes)
	if got := state.SameJSON(spec.ObjectPatch(kept), map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "yes"}}}); !got {
		t.Errorf("object part %v", spec.ObjectPatch(kept))
	}
	if got := state.SameJSON(spec.StatusPatch(kept), map[string]any{"phase": "Ready"}); !got {
		t.Errorf("status part %v", spec.StatusPatch(kept))
	}
}
