package reconcile_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// appKey is an index key that is not a string.
type appKey struct {
	Namespace, App string
}

// createPods creates a pod per app label value, named pod-0, pod-1, ...
func createPods(g Gomega, ns string, apps ...string) {
	for i, app := range apps {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
		}
		g.Expect(k8s.Create(context.Background(), pod)).To(Succeed())
	}
}

func TestObjectMemosStartAsCopiesOfTheOperatorMemoThatStartupFilled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createPods(g, ns, "db", "db", "web")

	reg := handlers.NewRegistry()
	byApp := handlers.OnIndex(reg, "pods_by_app", func(pod *corev1.Pod, _ *handlers.Cause) map[appKey]string {
		return map[appKey]string{{pod.Namespace, pod.Labels["app"]}: pod.Name}
	})
	names := handlers.OnFlatIndex(reg, "pod_names", func(pod *corev1.Pod, _ *handlers.Cause) string { return pod.Name })
	var operatorMemo atomic.Pointer[handlers.Memo]
	var startupIndexes atomic.Pointer[handlers.Indexes]
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		if c.Memo.Get("base") != "from options" {
			return handlers.Permanent(fmt.Errorf("the operator memo lacks Options.Memo: base = %v", c.Memo.Get("base")))
		}
		c.Memo.Set("region", "eu-1")
		c.Memo.Set("shared", new(atomic.Int32))
		operatorMemo.Store(c.Memo)
		startupIndexes.Store(c.Indexes)
		return nil
	})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		seen := map[string]any{
			"region": c.Memo.Get("region"),
			"base":   c.Memo.Get("base"),
			"db":     byApp.Get(c.Indexes, appKey{ns, "db"}),
			"names":  names.Get(c.Indexes, nil),
		}
		c.Memo.Set("region", obj.Name) // the object's own; no other memo sees it
		c.Memo.Get("shared").(*atomic.Int32).Add(1)
		return seen, nil
	}, handlers.ID("seen"))
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.Memo = map[string]any{"base": "from options"} })

	for _, name := range []string{"first", "second"} {
		obj := newExample(ns, name)
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(func(g Gomega) any { return statusField(g, key, "seen", "region") }, timeout).Should(Equal("eu-1"),
			"the first object's change to its memo leaked into the second's")
		g.Expect(statusField(g, key, "seen", "base")).To(Equal("from options"))
		g.Expect(statusField(g, key, "seen", "db")).To(Equal([]any{"pod-0", "pod-1"}))
		g.Expect(statusField(g, key, "seen", "names")).To(Equal([]any{"pod-0", "pod-1", "pod-2"}))
	}
	memo := operatorMemo.Load()
	g.Expect(memo.Get("region")).To(Equal("eu-1"), "an object's memo change reached the operator memo")
	g.Expect(memo.Get("shared").(*atomic.Int32).Load()).To(BeNumerically("==", 2), "values are shared: the copy is shallow")

	// The indexes a startup handler got are the live ones.
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-2"}})).To(Succeed())
	g.Eventually(func() []string { return names.Get(startupIndexes.Load(), nil) }, timeout).Should(Equal([]string{"pod-0", "pod-1"}))
	g.Expect(byApp.Keys(startupIndexes.Load())).To(Equal([]appKey{{ns, "db"}}))
}

func TestIndexFunctionsGetTheObjectsMemoAndLoggerAndIndexValuesComeInObjectOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	createPods(g, ns, "db", "db", "db")
	createPods(g, other, "db")

	reg := handlers.NewRegistry()
	// The values sort against the objects' order, so that an index sorting
	// its values rather than its objects fails.
	rank := map[string]string{"pod-0": "z", "pod-1": "y", "pod-2": "x"}
	byApp := handlers.OnIndex(reg, "pods_by_app", func(pod *corev1.Pod, _ *handlers.Cause) map[string]string {
		return map[string]string{pod.Labels["app"]: pod.Namespace[len(pod.Namespace)-1:] + rank[pod.Name]}
	})
	type seen struct {
		Memo   any
		Name   string
		Logger bool
	}
	byMemo := handlers.OnIndex(reg, "examples_by_memo", func(obj *kopfv1.KopfExample, c *handlers.Cause) map[string]seen {
		return map[string]seen{obj.Name: {Memo: c.Memo.Get("handled"), Name: c.Name, Logger: c.Log.GetSink() != nil}}
	})
	var indexes atomic.Pointer[handlers.Indexes]
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		indexes.Store(c.Indexes)
		return nil
	})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Memo.Set("handled", "by create")
		return nil, nil
	})
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Namespaces = []string{ns, other} })

	obj := newExample(ns, "memo")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	// The create handler's outcome write is an event: the index function
	// runs again and sees what the handler put in the object's memo.
	g.Eventually(func() []seen { return byMemo.Get(indexes.Load(), "memo") }, timeout).
		Should(Equal([]seen{{Memo: "by create", Name: "memo", Logger: true}}))

	mine, theirs := ns[len(ns)-1:], other[len(other)-1:]
	want := []string{mine + "z", mine + "y", mine + "x", theirs + "z"}
	if other < ns {
		want = []string{theirs + "z", mine + "z", mine + "y", mine + "x"}
	}
	g.Eventually(func() []string { return byApp.Get(indexes.Load(), "db") }, timeout).Should(Equal(want),
		"values come in the order of their objects' namespace/name")
}
