package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/kinds"
)

// onCreateByShard registers a create handler of one kind, with id
// <kind>_create, that records the shard that called it.
func onCreateByShard[T client.Object](reg *handlers.Registry, calls *shardCalls, shard, kind string, opts ...handlers.CreateOption) {
	handlers.OnCreate(reg, func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
		calls.add(shard, kind, obj.GetName())
		return nil, nil
	}, append(opts, handlers.ID(kind+"_create"))...)
}

// Sharding holds on every kind: two shards of a ring, each with create
// handlers of a cluster-scoped kind, built-in kinds with and without
// status, a typed-status CRD and an unstructured kind, handle exactly the
// objects labelled for them, each once, and never one labelled for the
// other shard or for none.
func TestEachShardHandlesItsOwnObjectsOnceOnEveryKind(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ns := env.Namespace
	const ring = "kinds-ring"
	label := "shard.alpha.sharding.timebertt.dev/" + ring
	var calls shardCalls
	for _, shard := range []string{"shard-a", "shard-b"} {
		reg := handlers.NewRegistry()
		onCreateByShard[*corev1.Namespace](reg, &calls, shard, "namespace")
		onCreateByShard[*corev1.Pod](reg, &calls, shard, "pod")
		onCreateByShard[*corev1.ConfigMap](reg, &calls, shard, "configmap")
		onCreateByShard[*kinds.Widget](reg, &calls, shard, "widget")
		onCreateByShard[*unstructured.Unstructured](reg, &calls, shard, "unstructured", handlers.ForResource("kopfexamples.kopf.dev"))
		runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
			o.Reconcile.Sharding = &reconcile.Sharding{Ring: ring, Shard: shard, Namespace: ns, ExternalAssigner: true}
		})
	}

	// Objects of every kind for shard-a, shard-b and none ("").
	var objects []client.Object
	for _, shard := range []string{"shard-a", "shard-b", ""} {
		labels := map[string]string{}
		if shard != "" {
			labels[label] = shard
		}
		name := "for-" + shard
		if shard == "" {
			name = "for-none"
		}
		m := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
		example := newExample(ns, name)
		example.Labels = labels
		objects = append(objects,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: labels}},
			&corev1.Pod{ObjectMeta: m, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}}},
			&corev1.ConfigMap{ObjectMeta: m},
			&kinds.Widget{ObjectMeta: m, Spec: kinds.WidgetSpec{Size: 1}},
			example,
		)
	}
	for _, obj := range objects {
		g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
		if n, ok := obj.(*corev1.Namespace); ok {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
		}
	}

	// calls.of(name) lists "<shard> <kind>" for every call on objects of
	// that name, whatever their kind.
	want := func(shard string) []string {
		return []string{shard + " configmap", shard + " pod", shard + " unstructured", shard + " widget"}
	}
	g.Eventually(func() []string { return calls.of("for-shard-a") }, timeout).Should(ConsistOf(want("shard-a")))
	g.Eventually(func() []string { return calls.of("for-shard-b") }, timeout).Should(ConsistOf(want("shard-b")))
	g.Eventually(func() []string { return calls.of(ns + "-for-shard-a") }, timeout).Should(Equal([]string{"shard-a namespace"}))
	g.Eventually(func() []string { return calls.of(ns + "-for-shard-b") }, timeout).Should(Equal([]string{"shard-b namespace"}))
	sorted := func(name string) []string { return slices.Sorted(slices.Values(calls.of(name))) }
	g.Consistently(func() [][]string {
		return [][]string{sorted("for-shard-a"), sorted("for-shard-b"), sorted("for-none"), sorted(ns + "-for-none"),
			sorted(ns + "-for-shard-a"), sorted(ns + "-for-shard-b")}
	}, settle, 100*time.Millisecond).Should(Equal([][]string{
		want("shard-a"), want("shard-b"), nil, nil, {"shard-a namespace"}, {"shard-b namespace"},
	}), "a shard handled an object twice, or one that is not its own")
}

// A shard that starts releases the objects that left its handlers' label
// selector while it was down, and only its own: another shard's object
// that left it too waits for that shard, so that no object is worked on
// by two replicas.
func TestAShardReleasesOnlyItsOwnObjectsThatLeftTheSelectorWhileItWasDown(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	app := map[string]any{"app": "narrow-" + ns}
	var calls shardCalls
	start := func(shard string) *envtest.Operator {
		reg := handlers.NewRegistry()
		onCreateAndDelete[*corev1.ConfigMap](reg, &envtest.Calls{}, "configmap", handlers.Labels(app))
		onCreateByShard[*corev1.ConfigMap](reg, &calls, shard, "configmap_by", handlers.Labels(app))
		return runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
			o.Reconcile.Sharding = &reconcile.Sharding{Ring: "left-ring", Shard: shard, Namespace: ns, ExternalAssigner: true}
		})
	}
	label := "shard.alpha.sharding.timebertt.dev/left-ring"
	objects := map[string]*corev1.ConfigMap{}
	ops := map[string]*envtest.Operator{}
	for _, shard := range []string{"shard-a", "shard-b"} {
		ops[shard] = start(shard)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "of-" + shard,
			Labels: map[string]string{label: shard, "app": "narrow-" + ns}}}
		g.Expect(k8s.Create(context.Background(), cm)).To(Succeed())
		objects[shard] = cm
	}
	finalizers := func(g Gomega, shard string) []string {
		var live corev1.ConfigMap
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(objects[shard]), &live)).To(Succeed())
		return live.Finalizers
	}
	for shard := range objects {
		g.Eventually(func(g Gomega) []string { return finalizers(g, shard) }, timeout).Should(ContainElement(gopfFinalizer))
		g.Expect(ops[shard].Stop()).To(Succeed())
	}
	leave := client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`))
	for _, cm := range objects {
		g.Expect(k8s.Patch(context.Background(), cm, leave)).To(Succeed())
	}

	start("shard-a")
	g.Eventually(func(g Gomega) []string { return finalizers(g, "shard-a") }, timeout).ShouldNot(ContainElement(gopfFinalizer))
	g.Consistently(func(g Gomega) []string { return finalizers(g, "shard-b") }, settle, 100*time.Millisecond).
		Should(ContainElement(gopfFinalizer), "shard-a released shard-b's object")
	start("shard-b")
	g.Eventually(func(g Gomega) []string { return finalizers(g, "shard-b") }, timeout).ShouldNot(ContainElement(gopfFinalizer))
	g.Expect(calls.of("of-shard-a")).To(Equal([]string{"shard-a configmap_by"}))
	g.Expect(calls.of("of-shard-b")).To(Equal([]string{"shard-b configmap_by"}))
}
