package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

func TestEventHandlerSeesEveryEventInOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	before := newExample(ns, "before")
	g.Expect(k8s.Create(ctx, before)).To(Succeed())

	var mu sync.Mutex
	seen := map[string][]watch.EventType{}
	reg := handlers.NewRegistry()
	handlers.OnEvent(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) error {
		mu.Lock()
		defer mu.Unlock()
		seen[obj.Name] = append(seen[obj.Name], c.Event)
		return fmt.Errorf("errors are only logged")
	})
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })
	events := func(name string) []watch.EventType {
		mu.Lock()
		defer mu.Unlock()
		return append([]watch.EventType(nil), seen[name]...)
	}

	// Once the initial list has been seen, new objects come as added.
	g.Eventually(func() []watch.EventType { return events("before") }, timeout).Should(Equal([]watch.EventType{watch.EventType("")}))
	obj := newExample(ns, "watched")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func() int { return len(events("watched")) }, timeout).Should(Equal(1))
	patchSpec(g, obj, `{"field":"changed"}`)
	g.Eventually(func() int { return len(events("watched")) }, timeout).Should(Equal(2))
	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Eventually(func() []watch.EventType { return events("watched") }, timeout).Should(Equal(
		[]watch.EventType{watch.Added, watch.Modified, watch.Deleted}))
	g.Expect(events("before")).To(Equal([]watch.EventType{watch.EventType("")}))
	g.Expect(requests.Writes("kopfexamples", "kopfexamples/status")).To(BeZero(), "event handlers keep no state and add no finalizer")
}

func TestIndexesAreReadyBeforeHandlersAndFollowTheirObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createPods(g, ns, "db", "db", "web")
	reg := handlers.NewRegistry()
	podsByApp := handlers.OnIndex(reg, "pods_by_app", func(pod *corev1.Pod, _ *handlers.Cause) map[string]string {
		return map[string]string{pod.Labels["app"]: pod.Name}
	}, handlers.Labels{"app": handlers.Present})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"db": len(podsByApp.Get(c.Indexes, "db"))}, nil
	}, handlers.ID("count"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"db": len(podsByApp.Get(c.Indexes, "db")), "keys": podsByApp.Keys(c.Indexes)}, nil
	}, handlers.ID("recount"))
	op := runOperator(t, ns, reg)
	_ = op

	obj := newExample(ns, "indexed")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "count", "db") }, timeout).Should(BeNumerically("==", 2))

	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-0"}})).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		var pod corev1.Pod
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pod-0"}, &pod) != nil
	}, timeout).Should(BeTrue())
	// Pods have no finalizers here, so the pod is gone; the index follows.
	g.Eventually(func(g Gomega) any {
		patchSpec(g, obj, fmt.Sprintf(`{"field":"%d"}`, time.Now().UnixNano()))
		return statusField(g, key, "recount", "db")
	}, timeout).Should(BeNumerically("==", 1))
	g.Expect(statusField(g, key, "recount", "keys")).To(ConsistOf("db", "web"))
}

func TestAdoptedChildrenBelongToTheirOwnerAndWakeItsReconcile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var level atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cm := &corev1.ConfigMap{Data: map[string]string{"field": obj.Spec.Field}}
		if err := objects.Adopt(obj, cm); err != nil {
			return nil, err
		}
		if err := k8s.Create(ctx, cm); err != nil {
			return nil, err
		}
		return map[string]any{"child": cm.Name}, nil
	}, handlers.ID("spawn_child"))
	handlers.OnReconcile(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (reconcile.Result, error) {
		level.Add(1)
		return reconcile.Result{}, nil
	}, handlers.Owns(&corev1.ConfigMap{}))
	runOperator(t, ns, reg)

	owner := newExample(ns, "parent")
	owner.Labels = map[string]string{"team": "a"}
	g.Expect(k8s.Create(ctx, owner)).To(Succeed())
	key := client.ObjectKeyFromObject(owner)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "spawn_child", "child") }, timeout).ShouldNot(BeNil())
	name := statusField(g, key, "spawn_child", "child").(string)

	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	g.Expect(cm.Name).To(HavePrefix("parent-"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("team", "a"))
	g.Expect(cm.OwnerReferences).To(HaveLen(1))
	ref := cm.OwnerReferences[0]
	g.Expect(ref.Kind).To(Equal("KopfExample"))
	g.Expect(ref.APIVersion).To(Equal("kopf.dev/v1"))
	g.Expect(ref.UID).To(Equal(owner.UID))
	g.Expect(*ref.Controller).To(BeTrue())
	g.Expect(*ref.BlockOwnerDeletion).To(BeTrue())

	before := level.Load()
	cm.Data["field"] = "edited"
	g.Expect(k8s.Update(ctx, &cm)).To(Succeed())
	g.Eventually(level.Load, timeout).Should(BeNumerically(">", before), "a child's change reconciles its owner")
}

func TestEventsArePostedOnRequestAndLogsOnlyWhenAskedTo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, bridge := range []gopfreconcile.LogEvents{gopfreconcile.LogEventsOff, gopfreconcile.LogEventsInfo} {
		ns := newNamespace(t)
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			c.Info("Greeted", "hello %s", obj.Name)
			c.Log.Info("a log line")
			return nil, nil
		}, handlers.ID("greet"))
		runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.LogEvents = bridge })
		obj := newExample(ns, "greeted")
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, obj.Name) }, timeout).Should(ContainElement("Greeted"))
		if bridge == gopfreconcile.LogEventsOff {
			g.Consistently(func(g Gomega) []string { return eventReasons(g, ns, obj.Name) }, time.Second).ShouldNot(ContainElement("Logging"))
		} else {
			g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, obj.Name) }, timeout).Should(ContainElement("Logging"))
		}
	}
}

func TestMemosAreSharedPerObjectAndStartFromTheDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnEvent(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) error {
		c.Memo.Update("events", func(old any) any { n, _ := old.(int); return n + 1 })
		return nil
	})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Memo.Set("owner", obj.Name)
		return nil, nil
	}, handlers.ID("remember"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"owner": c.Memo.Get("owner"), "events": c.Memo.Get("events"), "team": c.Memo.Get("team")}, nil
	}, handlers.ID("recall"))
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.Memo = map[string]any{"team": "blue"} })

	for _, name := range []string{"one", "two"} {
		obj := newExample(ns, name)
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		key := client.ObjectKeyFromObject(obj)
		waitHandled(g, key)
		patchSpec(g, obj, `{"field":"again"}`)
		g.Eventually(func(g Gomega) any { return statusField(g, key, "recall", "owner") }, timeout).Should(Equal(name))
		g.Expect(statusField(g, key, "recall", "team")).To(Equal("blue"))
		g.Expect(statusField(g, key, "recall", "events")).To(BeNumerically(">=", 2))
	}
}
