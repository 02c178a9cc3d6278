package reconcile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/kinds"
)

// gopfFinalizer is the finalizer gopf puts on the objects it holds.
const gopfFinalizer = "gopf.dev/finalizer"

// createAndDeleteOption is an option both OnCreate and OnDelete take.
type createAndDeleteOption interface {
	handlers.CreateOption
	handlers.DeleteOption
}

// onCreateAndDelete registers a create and a delete handler of one kind,
// with ids <kind>_create and <kind>_delete, that record their calls.
func onCreateAndDelete[T client.Object](reg *handlers.Registry, cs *envtest.Calls, kind string, opts ...createAndDeleteOption) {
	rec := func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}
	creates := []handlers.CreateOption{handlers.ID(kind + "_create")}
	deletes := []handlers.DeleteOption{handlers.ID(kind + "_delete")}
	for _, o := range opts {
		creates, deletes = append(creates, o), append(deletes, o)
	}
	handlers.OnCreate(reg, rec, creates...)
	handlers.OnDelete(reg, rec, deletes...)
}

// narrowKind is one kind of the narrowing test: an object its handlers
// select, one they do not, and the list the manager's cache fills.
type narrowKind struct {
	name                 string
	selected, unselected client.Object
	list                 client.ObjectList
}

// When every handler of a kind selects on a label, the kind's cache holds
// only the objects with it, on every kind: cluster-scoped, built-in with
// and without status, a typed-status CRD and unstructured. An object that
// leaves the selector is released as when filters stop matching in memory:
// its finalizer goes and no delete handler runs.
func TestANarrowedCacheHoldsOnlySelectedObjectsAndReleasesThoseThatLeaveOnEveryKind(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	in := map[string]string{"narrow": env.Namespace}
	out := map[string]string{"narrow": "elsewhere"}
	sel := handlers.Labels{"narrow": env.Namespace}
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	onCreateAndDelete[*corev1.Namespace](reg, &cs, "namespace", sel)
	onCreateAndDelete[*corev1.Pod](reg, &cs, "pod", sel)
	onCreateAndDelete[*corev1.ConfigMap](reg, &cs, "configmap", sel)
	onCreateAndDelete[*kinds.Widget](reg, &cs, "widget", sel)
	onCreateAndDelete[*unstructured.Unstructured](reg, &cs, "unstructured", sel, handlers.ForResource("kopfexamples.kopf.dev"))
	env.Start(reg, envtest.OperatorOptions{})

	objMeta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: env.Namespace, Name: name, Labels: labels}
	}
	namespace := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "narrow-", Labels: labels}}
	}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: objMeta(name, labels), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}}}
	}
	example := func(name string, labels map[string]string) *kopfv1.KopfExample {
		e := newExample(env.Namespace, name)
		e.SetLabels(labels)
		return e
	}
	examples := &unstructured.UnstructuredList{}
	examples.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExampleList"))
	objects := []narrowKind{
		{"namespace", namespace(in), namespace(out), &corev1.NamespaceList{}},
		{"pod", pod("in", in), pod("out", out), &corev1.PodList{}},
		{"configmap", &corev1.ConfigMap{ObjectMeta: objMeta("in", in)}, &corev1.ConfigMap{ObjectMeta: objMeta("out", out)}, &corev1.ConfigMapList{}},
		{"widget", &kinds.Widget{ObjectMeta: objMeta("in", in), Spec: kinds.WidgetSpec{Size: 1}},
			&kinds.Widget{ObjectMeta: objMeta("out", out), Spec: kinds.WidgetSpec{Size: 1}}, &kinds.WidgetList{}},
		{"unstructured", example("in", in), example("out", out), examples},
	}
	for _, k := range objects {
		for _, obj := range []client.Object{k.selected, k.unselected} {
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed(), k.name)
			if ns, ok := obj.(*corev1.Namespace); ok {
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
			}
		}
	}
	finalizers := func(g Gomega, obj client.Object) []string {
		live := obj.DeepCopyObject().(client.Object)
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
		return live.GetFinalizers()
	}
	cached := func(g Gomega, k narrowKind) []string {
		var opts []client.ListOption
		if k.selected.GetNamespace() != "" {
			opts = append(opts, client.InNamespace(env.Namespace))
		}
		g.Expect(env.Operator.Manager.GetCache().List(ctx, k.list, opts...)).To(Succeed())
		items, err := meta.ExtractList(k.list)
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, item := range items {
			names = append(names, item.(client.Object).GetName())
		}
		return names
	}

	for _, k := range objects {
		g.Eventually(func() int { return cs.Count(k.name + "_create") }, timeout).Should(Equal(1), k.name)
		g.Eventually(func(g Gomega) []string { return finalizers(g, k.selected) }, timeout).Should(ContainElement(gopfFinalizer), k.name)
		names := cached(g, k)
		g.Expect(names).To(ContainElement(k.selected.GetName()), k.name)
		g.Expect(names).NotTo(ContainElement(k.unselected.GetName()), k.name)
		g.Expect(finalizers(g, k.unselected)).NotTo(ContainElement(gopfFinalizer), k.name)
	}

	// Each selected object leaves the selector: released, and gone from
	// the cache as if deleted, without a delete handler's call.
	leave := client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"labels":{"narrow":"elsewhere"}}}`))
	for _, k := range objects {
		g.Expect(env.Client.Patch(ctx, k.selected, leave)).To(Succeed(), k.name)
	}
	for _, k := range objects {
		g.Eventually(func(g Gomega) []string { return finalizers(g, k.selected) }, timeout).ShouldNot(ContainElement(gopfFinalizer), k.name)
		g.Eventually(func(g Gomega) []string { return cached(g, k) }, timeout).ShouldNot(ContainElement(k.selected.GetName()), k.name)
	}
	g.Consistently(func() int {
		n := 0
		for _, k := range objects {
			n += cs.Count(k.name+"_delete") + cs.Count(k.name+"_create")
		}
		return n
	}, time.Second, 100*time.Millisecond).Should(Equal(len(objects)))
}
