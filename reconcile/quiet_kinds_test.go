package reconcile_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/kinds"
)

// stubbornUntil registers a create handler, with id <kind>_create, that
// fails with the same temporary error on its first six attempts, then
// waits on the seventh until its call is cancelled, and succeeds once
// restarted is set.
func stubbornUntil[T client.Object](reg *handlers.Registry, cs *envtest.Calls, restarted *atomic.Bool, kind string, opts ...handlers.CreateOption) {
	handlers.OnCreate(reg, func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
		cs.Record(c)
		switch {
		case restarted.Load():
			return map[string]any{"done": true}, nil
		case c.Retry < 6:
			return nil, handlers.Temporary(errors.New("not yet"), 20*time.Millisecond)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}, append(opts, handlers.ID(kind+"_create"))...)
}

// Quiet retries hold on every kind: a handler that keeps failing with one
// error writes its record on its 1st, 2nd and 4th failure only, wherever
// the kind keeps gopf's state (status, or annotations when status prunes
// it), and a restart goes on from the last record written, not from the
// start, and never runs a create handler that succeeded again.
func TestQuietRetriesWriteOnDoublingsAndResumeAfterARestartOnEveryKind(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	sel := handlers.Labels{"quiet": env.Namespace}
	labels := map[string]string{"quiet": env.Namespace}
	var cs envtest.Calls
	var restarted atomic.Bool
	reg := handlers.NewRegistry()
	stubbornUntil[*corev1.Namespace](reg, &cs, &restarted, "namespace", sel)
	stubbornUntil[*corev1.Pod](reg, &cs, &restarted, "pod", sel)
	stubbornUntil[*corev1.ConfigMap](reg, &cs, &restarted, "configmap", sel)
	stubbornUntil[*kinds.Widget](reg, &cs, &restarted, "widget", sel)
	stubbornUntil[*unstructured.Unstructured](reg, &cs, &restarted, "unstructured", sel, handlers.ForResource("kopfexamples.kopf.dev"))
	var requests envtest.RequestCounter
	env.Start(reg, envtest.OperatorOptions{Requests: &requests})

	example := newExample(env.Namespace, "quiet")
	example.SetLabels(labels)
	objects := []restartKind{
		{"namespace", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "quiet-", Labels: labels}}},
		{"pod", "pods", &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "p", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
		}},
		{"configmap", "configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "cm", Labels: labels}}},
		{"widget", "widgets", &kinds.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "w", Labels: labels}, Spec: kinds.WidgetSpec{Size: 1}}},
		{"unstructured", "kopfexamples", example},
	}
	for _, k := range objects {
		g.Expect(env.Client.Create(ctx, k.obj)).To(Succeed())
		if ns, ok := k.obj.(*corev1.Namespace); ok {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
		}
	}
	// Six failures, then the seventh attempt hangs: the records of the
	// 1st, 2nd and 4th failure were written, one write each.
	for _, k := range objects {
		g.Eventually(func() int { return cs.Count(k.name + "_create") }, timeout).Should(Equal(7), k.name)
	}
	for _, k := range objects {
		g.Expect(requests.Writes(k.resource, k.resource+"/status")).To(Equal(3), "%s: %v", k.name, requests.Snapshot())
	}

	g.Expect(env.Operator.Stop()).To(Succeed())
	restarted.Store(true)
	requests.Reset()
	env.Restart()
	for _, k := range objects {
		g.Eventually(func() int { return cs.Count(k.name + "_create") }, timeout).Should(Equal(8), k.name)
		// The record of the 4th failure, or a later one if the stop
		// saved the attempts counted in memory; never a fresh start.
		g.Expect(cs.Of(k.name + "_create")[7].Retry).To(BeNumerically(">=", 4), k.name)
	}
	// The success is stored with one write, and nothing runs again.
	for _, k := range objects {
		g.Eventually(func() int { return requests.Writes(k.resource, k.resource+"/status") }, timeout).Should(Equal(1), "%s: %v", k.name, requests.Snapshot())
	}
	g.Consistently(func() int {
		n := 0
		for _, k := range objects {
			n += cs.Count(k.name + "_create")
		}
		return n
	}, time.Second, 100*time.Millisecond).Should(Equal(8 * len(objects)))
}
