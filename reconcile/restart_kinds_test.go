package reconcile_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/kinds"
)

// onEveryCause registers create, update and resume handlers of one kind,
// with ids <kind>_create and so on, that record their calls and return a
// result.
func onEveryCause[T client.Object](reg *handlers.Registry, cs *envtest.Calls, kind string, sel handlers.Labels) {
	rec := func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return map[string]any{"done": true}, nil
	}
	handlers.OnCreate(reg, rec, handlers.ID(kind+"_create"), sel)
	handlers.OnUpdate(reg, rec, handlers.ID(kind+"_update"), sel)
	handlers.OnResume(reg, rec, handlers.ID(kind+"_resume"), sel)
}

// restartKind is one kind of the restart test: an object of it, and the
// resource its writes go to.
type restartKind struct {
	name     string
	resource string
	obj      client.Object
}

func TestCreateHandlersRunOnceOnEveryKindOfObjectAcrossRestarts(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	sel := handlers.Labels{"restart": env.Namespace}
	labels := map[string]string{"restart": env.Namespace}
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	onEveryCause[*corev1.Namespace](reg, &cs, "namespace", sel)
	onEveryCause[*corev1.Pod](reg, &cs, "pod", sel)
	onEveryCause[*corev1.ConfigMap](reg, &cs, "configmap", sel)
	onEveryCause[*kinds.Widget](reg, &cs, "widget", sel)
	var requests envtest.RequestCounter
	env.Start(reg, envtest.OperatorOptions{Requests: &requests})

	objects := []restartKind{
		{"namespace", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-", Labels: labels}}},
		{"pod", "pods", &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "p", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
		}},
		{"configmap", "configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "cm", Labels: labels}, Data: map[string]string{"a": "b"}}},
		{"widget", "widgets", &kinds.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "w", Labels: labels}, Spec: kinds.WidgetSpec{Size: 1}}},
	}
	for _, k := range objects {
		g.Expect(env.Client.Create(ctx, k.obj)).To(Succeed())
		if ns, ok := k.obj.(*corev1.Namespace); ok {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
		}
	}
	for _, k := range objects {
		g.Eventually(func(g Gomega) map[string]string {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(k.obj), k.obj)).To(Succeed())
			return k.obj.GetAnnotations()
		}, timeout).Should(HaveKey("gopf.dev/last-handled-configuration"), "%s: the state is kept in annotations", k.name)
		g.Expect(cs.Count(k.name+"_create")).To(Equal(1), k.name)
		g.Expect(requests.Writes(k.resource, k.resource+"/status")).To(Equal(1), "%s: a create costs one write (the state; results its status cannot keep are not sent): %v", k.name, requests.Snapshot())
	}

	// A restart: every object is resumed, none is created again, and
	// nothing is written.
	requests.Reset()
	env.Restart()
	for _, k := range objects {
		g.Eventually(func() int { return cs.Count(k.name + "_resume") }, timeout).Should(Equal(1), k.name)
	}
	for _, k := range objects {
		g.Expect(cs.Count(k.name+"_create")).To(Equal(1), "%s: the create handler ran again after a restart", k.name)
		g.Expect(cs.Count(k.name+"_update")).To(Equal(0), k.name)
		g.Expect(requests.Writes(k.resource, k.resource+"/status")).To(Equal(0), "%s: %v", k.name, requests.Snapshot())
	}

	// A change made while the operator is down reaches the update
	// handlers (with the resume handlers), not the create handlers.
	g.Expect(env.Operator.Stop()).To(Succeed())
	for _, k := range objects {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"phase":"two"}}}`))
		g.Expect(env.Client.Patch(ctx, k.obj, patch)).To(Succeed())
	}
	env.Restart()
	for _, k := range objects {
		g.Eventually(func() int { return cs.Count(k.name + "_update") }, timeout).Should(Equal(1), k.name)
		g.Expect(cs.Of(k.name + "_update")[0].Diff).To(ContainSubstring("metadata.labels"), k.name)
		g.Eventually(func() int { return cs.Count(k.name + "_resume") }, timeout).Should(Equal(2), k.name)
		g.Expect(cs.Count(k.name+"_create")).To(Equal(1), "%s: the change reached the create handler", k.name)
	}
}

// An older gopf moved kinds to annotations in memory when status dropped
// its state; a kind whose status keeps it may therefore carry its objects'
// state in annotations. Such an object is not new: it is resumed, and its
// next write moves the state to status.
func TestStateAnOlderGopfKeptInAnnotationsIsReadAndMovedToStatus(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, nil), handlers.ID("create"))
	handlers.OnUpdate(reg, recording(&cs, nil), handlers.ID("update"))
	handlers.OnResume(reg, recording(&cs, nil), handlers.ID("resume"))

	obj := newExample(env.Namespace, "moved")
	obj.Annotations = map[string]string{"gopf.dev/last-handled-configuration": `{"spec":{"field":"value","items":["item1","item2"]}}`}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	env.Start(reg, envtest.OperatorOptions{})

	g.Eventually(func() int { return cs.Count("resume") }, timeout).Should(Equal(1))
	g.Expect(cs.Count("create")).To(Equal(0), "an object whose state sits in annotations looked new")
	patchSpec(g, obj, `{"field":"changed"}`)
	g.Eventually(func() int { return cs.Count("update") }, timeout).Should(Equal(1))
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "lastHandled") }, timeout).Should(ContainSubstring(`"changed"`))
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		return obj.Annotations
	}, timeout).ShouldNot(HaveKey("gopf.dev/last-handled-configuration"))
}
