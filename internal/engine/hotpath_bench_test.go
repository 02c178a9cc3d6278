package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/gate"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/patch"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// The benchmarks of this file measure the engine's own work per reconcile
// (CPU and allocations), with the cache and the API server replaced by an
// in-memory object and writes that go nowhere, so that what they count is
// gopf's. Run them with `make bench-go` or
//
//	go test -run '^$' -bench . -benchmem ./reconcile/
//
// The operator they model is the benchmark's (test/bench/gopfop): one
// create, one update and one delete handler on KopfExample, each create and
// update handler returning a small map.

var benchGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// benchServer is the cache and the API server of one object: Get copies
// it, Patch applies a JSON merge patch to it and Update replaces it (gopf's
// finalizer on an unstructured object), each answering with the result.
// The time it takes to apply a write is not counted; patches counts the
// writes.
type benchServer struct {
	client.Client // nil: a reconcile only reads, patches and updates
	b             *testing.B
	obj           client.Object // as stored; replaced, never changed, by a write
	patches       int
}

func (s *benchServer) Update(ctx context.Context, obj client.Object, _ ...client.UpdateOption) error {
	s.b.StopTimer()
	defer s.b.StartTimer()
	s.patches++
	s.obj = obj.DeepCopyObject().(client.Object)
	return s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

func (s *benchServer) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if meta, ok := obj.(*metav1.PartialObjectMetadata); ok { // gopf's writes read back metadata only
		switch stored := s.obj.(type) {
		case *kopfv1.KopfExample:
			meta.ObjectMeta = *stored.ObjectMeta.DeepCopy()
		case *unstructured.Unstructured:
			m, _ := stored.Object["metadata"].(map[string]any)
			return runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta.ObjectMeta)
		}
		return nil
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(s.obj.DeepCopyObject()).Elem())
	return nil
}

func (s *benchServer) Patch(ctx context.Context, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
	s.b.StopTimer()
	defer s.b.StartTimer()
	s.patches++
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	changes, ok := state.DecodeJSON(string(data)).(map[string]any)
	if !ok {
		return fmt.Errorf("not a merge patch: %s", data)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.obj)
	if err != nil {
		return err
	}
	raw = state.ApplyMergePatch(state.DeepCopyJSON(raw).(map[string]any), changes) // the converter may share maps with s.obj
	out := s.obj.DeepCopyObject().(client.Object)
	if u, ok := out.(*unstructured.Unstructured); ok {
		u.Object = raw
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, out); err != nil {
		return err
	}
	s.obj = out
	return s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

func (s *benchServer) Status() client.SubResourceWriter { return benchStatus{s} }

// benchStatus patches status as the main resource: the object has both.
type benchStatus struct{ *benchServer }

func (s benchStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
	return s.benchServer.Patch(ctx, obj, p)
}

func (s benchStatus) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	panic("not used by a reconcile")
}

func (s benchStatus) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	panic("not used by a reconcile")
}

func (s benchStatus) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	panic("not used by a reconcile")
}

// benchRegistry registers the benchmark operator's handlers, on
// KopfExample or, with unstructured, on unstructured objects of its kind.
func benchRegistry(unstructuredObjects bool) *handlers.Registry {
	reg := handlers.NewRegistry()
	created := func() (any, error) { return map[string]any{"message": "created"}, nil }
	updated := func(field string) (any, error) { return map[string]any{"message": "updated", "field": field}, nil }
	if unstructuredObjects {
		kind := handlers.ForKind(benchGVK.Group, benchGVK.Version, benchGVK.Kind)
		handlers.OnCreate(reg, func(_ context.Context, _ *unstructured.Unstructured, _ *handlers.Cause) (any, error) {
			return created()
		}, handlers.ID("create_fn"), kind)
		handlers.OnUpdate(reg, func(_ context.Context, obj *unstructured.Unstructured, _ *handlers.Cause) (any, error) {
			field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
			return updated(field)
		}, handlers.ID("update_fn"), kind)
		handlers.OnDelete(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) (any, error) {
			return nil, nil
		}, handlers.ID("delete_fn"), kind)
		return reg
	}
	handlers.OnCreate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) {
		return created()
	}, handlers.ID("create_fn"))
	handlers.OnUpdate(reg, func(_ context.Context, obj *kopfv1.KopfExample, _ *handlers.Cause) (any, error) {
		return updated(obj.Spec.Field)
	}, handlers.ID("update_fn"))
	handlers.OnDelete(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("delete_fn"))
	return reg
}

// benchController is the controller Setup would build for the registry,
// reading from and writing to server.
func benchController(b *testing.B, unstructuredObjects bool, server *benchServer) *KindController {
	b.Helper()
	reg := benchRegistry(unstructuredObjects)
	if err := reg.Err(); err != nil {
		b.Fatal(err)
	}
	sc, err := scope.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{}.WithDefaults()
	set := contract.SetOf(reg)
	k := &KindController{
		Name: "gopf-kopfexample.kopf.dev", GVK: benchGVK, opts: opts,
		reader: server, writer: server, out: patch.New(benchGVK, true, server), hasStatus: true, finalizer: opts.Prefix + "/finalizer",
		Shared: &Shared{Set: set, Indexes: spec.NewIndexes(), Gate: startedGate(), Scope: sc, Memo: &spec.Memo{}},
		Log:    logr.Discard(), Memory: memory.New(nil, nil),
	}
	if unstructuredObjects {
		k.NewObject = func() client.Object { u := &unstructured.Unstructured{}; u.SetGroupVersionKind(benchGVK); return u }
	} else {
		k.NewObject = func() client.Object { return &kopfv1.KopfExample{} }
	}
	if err := k.chooseStorage(state.KindSchema{Known: true, Crd: true}); err != nil {
		b.Fatal(err)
	}
	for _, r := range set.Handlers(contract.ObjectKinds...) {
		k.Add(r)
	}
	return k
}

// benchObject is a KopfExample as the benchmark creates it, in the form
// the controller reads.
func benchObject(b *testing.B, unstructuredObjects bool) client.Object {
	b.Helper()
	obj := &kopfv1.KopfExample{
		TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfExample"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench", Name: "kopf-example-00042", UID: "d0c5a7e2-1111-4c2b-9a1e-5f0e8a6b7c01",
			ResourceVersion: "12345", Generation: 1, CreationTimestamp: metav1.Now(),
			Labels: map[string]string{"app": "bench"},
		},
		Spec: kopfv1.KopfExampleSpec{Field: "initial", Items: []string{"item1", "item2"}, Duration: "1m"},
	}
	if !unstructuredObjects {
		return obj
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: raw}
}

// benchSetUp returns a controller and its server holding the benchmark's
// object: new, held (gopf's finalizer added, no handler run yet), handled
// (gopf's create handlers ran), or handled and then changed (spec.field
// updated).
func benchSetUp(b *testing.B, unstructuredObjects bool, stage string) (*KindController, *benchServer) {
	b.Helper()
	server := &benchServer{b: b, obj: benchObject(b, unstructuredObjects)}
	k := benchController(b, unstructuredObjects, server)
	if stage == "new" {
		return k, server
	}
	key := client.ObjectKeyFromObject(server.obj)
	// The finalizer's turn, then the handlers' turn.
	turns := 2
	if stage == "held" {
		turns = 1
	}
	for range turns {
		if _, err := k.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			b.Fatal(err)
		}
	}
	if stage != "handled" {
		k.Memory.Forget(key)
	}
	if server.patches != turns {
		b.Fatalf("%d turns on the new object took %d patches, want one each", turns, server.patches)
	}
	server.patches = 0
	if stage == "changed" {
		obj := server.obj.DeepCopyObject().(client.Object)
		if u, ok := obj.(*unstructured.Unstructured); ok {
			_ = unstructured.SetNestedField(u.Object, "updated", "spec", "field")
		} else {
			obj.(*kopfv1.KopfExample).Spec.Field = "updated"
		}
		server.obj = obj
	}
	return k, server
}

// benchReconcile reconciles the server's object b.N times, from the same
// start each time (the object and, unless remember is set, gopf's memory of
// it), and checks that each reconcile sent wantPatches patches.
func benchReconcile(b *testing.B, k *KindController, server *benchServer, remember bool, wantPatches int) {
	start := server.obj
	key := client.ObjectKeyFromObject(start)
	ctx := logf.IntoContext(context.Background(), logr.Discard())
	req := reconcile.Request{NamespacedName: key}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := k.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
		if !remember {
			k.Memory.Forget(key)
		}
		server.obj = start
	}
	b.StopTimer()
	if server.patches != wantPatches*b.N {
		b.Fatalf("%d patches in %d reconciles, want %d per reconcile", server.patches, b.N, wantPatches)
	}
}

// BenchmarkReconcile is one whole reconcile of an object, per cause: a new
// object (its finalizer), the same with the finalizer (create handler,
// status), a changed one (update handler, status), one that is already
// handled (a resync, or the first sight after a restart: nothing to do,
// nothing written), and the version gopf's own last write left (its watch
// event: nothing to do).
func BenchmarkReconcile(b *testing.B) {
	for _, form := range []struct {
		name         string
		unstructured bool
	}{{"typed", false}, {"unstructured", true}} {
		for _, c := range []struct {
			name, stage string
			remember    bool
			patches     int
		}{
			{"finalizer", "new", false, 1}, {"create", "held", false, 1}, {"update", "changed", false, 1},
			{"resync", "handled", false, 0}, {"own-write", "handled", true, 0},
		} {
			b.Run(form.name+"/"+c.name, func(b *testing.B) {
				k, server := benchSetUp(b, form.unstructured, c.stage)
				benchReconcile(b, k, server, c.remember, c.patches)
			})
		}
	}
}

// benchTurn is a turn on a handled KopfExample whose spec.field changed.
func benchTurn(b *testing.B) (*KindController, *turn) {
	k, server := benchSetUp(b, false, "changed")
	t := &turn{k: k, log: logr.Discard(), obj: server.obj, now: time.Now(), store: k.store}
	if err := t.refresh(); err != nil {
		b.Fatal(err)
	}
	t.mem = &memory.Memory{Resumed: true}
	return k, t
}

// BenchmarkEssence is the conversion of the object and its essence, in both
// forms (refresh).
func BenchmarkEssence(b *testing.B) {
	_, t := benchTurn(b)
	b.ReportAllocs()
	for range b.N {
		if err := t.refresh(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateLoad reads the stored state from the object.
func BenchmarkStateLoad(b *testing.B) {
	_, t := benchTurn(b)
	b.ReportAllocs()
	for range b.N {
		if st, err := t.store.Load(t.raw); err != nil || st == nil {
			b.Fatal(st, err)
		}
	}
}

// BenchmarkStateCompare decides whether the state changed (it did not).
func BenchmarkStateCompare(b *testing.B) {
	_, t := benchTurn(b)
	st, err := t.store.Load(t.raw)
	if err != nil {
		b.Fatal(err)
	}
	other := st.Clone()
	b.ReportAllocs()
	for range b.N {
		if !state.SameState(st, other) {
			b.Fatal("a state differs from its clone")
		}
	}
}

// BenchmarkSelect applies the handlers' filters to the object.
func BenchmarkSelect(b *testing.B) {
	k, t := benchTurn(b)
	b.ReportAllocs()
	for range b.N {
		if got := k.selected(k.Change, t.obj, t.raw); len(got) != 3 {
			b.Fatalf("%d handlers selected, want 3", len(got))
		}
	}
}

// BenchmarkCause derives the cause of a changed object and the update
// handler's old and new values and diff.
func BenchmarkCause(b *testing.B) {
	k, t := benchTurn(b)
	st, err := t.store.Load(t.raw)
	if err != nil {
		b.Fatal(err)
	}
	t.known, t.st = st, st.Clone()
	o := &decide.Object{Obj: t.obj, Essence: t.essence, Tree: t.essenceTree, Known: t.known, Records: t.st.Progress}
	mem := decide.Memory{Resumed: true, SpawnHolds: func([]*contract.Handler) bool { return false }}
	b.ReportAllocs()
	for range b.N {
		d := decide.Decide(o, k.finalizers(), decide.Selected{Change: k.Change}, mem)
		if d.Reason != handlers.ReasonUpdate || len(d.Entries) != 1 {
			b.Fatalf("cause %q with %d handlers, want update with 1", d.Reason, len(d.Entries))
		}
	}
}

// startedGate is the gate of an operator whose startup handlers are done.
func startedGate() *gate.Gate {
	g := &gate.Gate{}
	g.SetStarted()
	return g
}
