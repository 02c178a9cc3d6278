package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// decideController is a KopfExample controller with a create, update,
// field (spec.field), resume and delete handler, all for objects labelled
// app=demo; the delete handler only for those labelled protect=yes.
func decideController(t *testing.T) *engine.KindController {
	t.Helper()
	reg := handlers.NewRegistry()
	noop := func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return nil, nil }
	app := handlers.Labels{"app": "demo"}
	handlers.OnCreate(reg, noop, handlers.ID("create"), app)
	handlers.OnUpdate(reg, noop, handlers.ID("update"), app)
	handlers.OnField(reg, "spec.field", noop, handlers.ID("field"), app)
	handlers.OnResume(reg, noop, handlers.ID("resume"), app)
	handlers.OnDelete(reg, noop, handlers.ID("delete"), handlers.Labels{"app": "demo", "protect": "yes"})
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	k, err := engine.DescribeKind(kopfv1.GroupVersion.WithKind("KopfExample"), func() client.Object { return &kopfv1.KopfExample{} },
		engine.Options{}.WithDefaults(), engine.KindFacts{HasStatus: true, Schema: state.KindSchema{Known: true, Crd: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		k.Add(r)
	}
	return k
}

// decideCase is one object as a starting operator finds it: its labels,
// finalizers and deletion, and gopf's stored state of it. (How the
// process's memory of an object changes the decision is internal/decide's
// to test.)
type decideCase struct {
	labels     map[string]string
	finalizers []string
	deleting   bool
	// handled stores the object's essence as last handled, as it is now
	// or, with changed, before spec.field changed.
	handled, changed bool
	progress         map[string]*state.Progress

	// What decide returns: route, finalizer step, cause, resume, entries.
	route      decide.Route
	finalizer  decide.FinalizerStep
	reason     handlers.Reason
	withResume bool
	entries    []string
	// actions are what the Planner says a starting operator does, as
	// verb:handler.
	actions []string
}

func TestDecideAndThePlanTellTheSameStory(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	demo := map[string]string{"app": "demo", "protect": "yes"}
	gopfFinalizer := []string{"gopf.dev/finalizer"}
	finishedResume := map[string]*state.Progress{
		"update": {Reason: handlers.ReasonUpdate, Retries: 1, Delayed: timeRef(now.Add(time.Hour))},
		"resume": {Reason: handlers.ReasonResume, Success: true, Retries: 1},
	}
	for name, tc := range map[string]decideCase{
		"no handler selects it": {labels: map[string]string{"app": "other"},
			route: decide.RouteIgnore, actions: []string{"nothing:"}},
		"a new object gets the finalizer, then its create": {labels: demo,
			route: decide.RouteLive, finalizer: decide.FinalizerAdd, reason: handlers.ReasonCreate, entries: []string{"create", "field"},
			actions: []string{"add-finalizer:", "call:create", "call:field"}},
		"a handled object on first sight is resumed": {labels: demo, finalizers: gopfFinalizer, handled: true,
			route: decide.RouteLive, reason: handlers.ReasonResume, withResume: true, entries: []string{"resume"},
			actions: []string{"call:resume"}},
		"a change made while the operator was down comes with a resume": {labels: demo, finalizers: gopfFinalizer, handled: true, changed: true,
			route: decide.RouteLive, reason: handlers.ReasonUpdate, withResume: true, entries: []string{"update", "field", "resume"},
			actions: []string{"call:update", "call:field", "call:resume"}},
		// Before decide, the plan took an earlier process's finished resume
		// record for this process's and said the resume was done, while the
		// engine ran it again.
		"an unfinished update resumes again in a new process": {labels: demo, finalizers: gopfFinalizer, handled: true, changed: true, progress: finishedResume,
			route: decide.RouteLive, reason: handlers.ReasonUpdate, withResume: true, entries: []string{"update", "field", "resume"},
			actions: []string{"continue:update", "call:field", "call:resume"}},
		"a create whose handlers all finished is recorded": {labels: demo, finalizers: gopfFinalizer, progress: map[string]*state.Progress{
			"create": {Reason: handlers.ReasonCreate, Success: true, Retries: 1}, "field": {Reason: handlers.ReasonUpdate, Success: true, Retries: 1}},
			route: decide.RouteLive, reason: handlers.ReasonCreate, entries: []string{"create", "field"},
			actions: []string{"record:"}},
		"a deletion runs the delete handlers, then the finalizer goes": {labels: demo, finalizers: gopfFinalizer, handled: true, deleting: true,
			route: decide.RouteDelete, reason: handlers.ReasonDelete, entries: []string{"delete"},
			actions: []string{"call:delete", "release-finalizer:"}},
		"a deletion held by others only": {labels: demo, finalizers: []string{"example.com/other"}, handled: true, deleting: true,
			route: decide.RouteOthers, actions: []string{"nothing:"}},
	} {
		t.Run(name, func(t *testing.T) {
			k := decideController(t)
			item := decideObject(t, k, tc, now)
			pk := &plannedKind{k: k, desc: k.Describe()}
			pk.stores = pk.desc.Places
			in, err := k.Inspect(item, pk.stores)
			if err != nil {
				t.Fatal(err)
			}
			d := in.Decision
			var ids []string
			for _, e := range d.Entries {
				ids = append(ids, e.Opts.ID)
			}
			got := fmt.Sprintf("route %d, finalizer %d, %q, resume %v, entries %v", d.Route, d.Finalizer, d.Reason, d.WithResume, ids)
			want := fmt.Sprintf("route %d, finalizer %d, %q, resume %v, entries %v", tc.route, tc.finalizer, tc.reason, tc.withResume, tc.entries)
			if got != want {
				t.Errorf("decide: %s\n           want %s", got, want)
			}
			st, err := (&Planner{}).objectStatus(pk, item, now, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, a := range st.OnStart {
				actions = append(actions, string(a.Do)+":"+a.Handler)
			}
			if !slices.Equal(actions, tc.actions) {
				t.Errorf("plan on start: %v, want %v", actions, tc.actions)
			}
		})
	}
}

// decideObject is the KopfExample of a case, with gopf's state stored as
// the case says.
func decideObject(t *testing.T, k *engine.KindController, tc decideCase, now time.Time) *unstructured.Unstructured {
	t.Helper()
	obj := &kopfv1.KopfExample{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfExample"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", UID: "u-1", Labels: tc.labels, Finalizers: tc.finalizers},
		Spec:       kopfv1.KopfExampleSpec{Field: "before"},
	}
	if tc.deleting {
		obj.DeletionTimestamp = &metav1.Time{Time: now}
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	st := &state.State{Progress: tc.progress}
	if tc.handled {
		st.Essence = essenceOf(t, k, raw)
	}
	if tc.changed {
		_ = unstructured.SetNestedField(raw, "after", "spec", "field")
	}
	var p spec.Patch
	if err := k.Describe().Places[0].Save(&p, raw, st); err != nil {
		t.Fatal(err)
	}
	raw = state.ApplyMergePatch(raw, spec.ObjectPatch(&p))
	raw = state.ApplyMergePatch(raw, map[string]any{"status": spec.StatusPatch(&p)})
	return &unstructured.Unstructured{Object: raw}
}

// essenceOf is the essence the controller computes for raw.
func essenceOf(t *testing.T, k *engine.KindController, raw map[string]any) string {
	t.Helper()
	in, err := k.Inspect(&unstructured.Unstructured{Object: raw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(in.Essence) == "" {
		t.Fatal("empty essence")
	}
	return in.Essence
}
