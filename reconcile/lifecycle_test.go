package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

func TestResumeRunsAfterARestartAndMixesIntoUpdates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	newRegistry := func() *handlers.Registry {
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, recording(&cs, nil), handlers.ID("create"))
		handlers.OnUpdate(reg, recording(&cs, nil), handlers.ID("update"))
		handlers.OnResume(reg, recording(&cs, nil), handlers.ID("resume"))
		return reg
	}
	op := runOperator(t, ns, newRegistry())
	unchanged, changed := newExample(ns, "unchanged"), newExample(ns, "changed")
	g.Expect(k8s.Create(ctx, unchanged)).To(Succeed())
	g.Expect(k8s.Create(ctx, changed)).To(Succeed())
	for _, o := range []client.Object{unchanged, changed} {
		key := client.ObjectKeyFromObject(o)
		waitHandled(g, key)
	}
	g.Expect(cs.Count("resume")).To(Equal(0), "objects created in this process are not resumed")
	g.Expect(op.Stop()).To(Succeed())

	patchSpec(g, changed, `{"field":"changed while down"}`)
	runOperator(t, ns, newRegistry())
	g.Eventually(func() int { return cs.Count("resume") }, timeout).Should(Equal(2))
	g.Eventually(func() int { return cs.Count("update") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("update")[0].Diff).To(ContainSubstring("changed while down"))
	g.Consistently(func() int { return cs.Count("resume") + cs.Count("create") }, time.Second).Should(Equal(4), "resume runs once per process, create never again")
}

func TestObjectsNoHandlerSelectsAreLeftAloneUntilTheyMatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, map[string]any{"ok": true}), handlers.ID("create"), handlers.Labels{"app": "mine"})
	handlers.OnUpdate(reg, recording(&cs, nil), handlers.ID("update"), handlers.Labels{"app": "mine"})
	handlers.OnDelete(reg, recording(&cs, nil), handlers.ID("delete"), handlers.Labels{"app": "mine"})
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })

	obj := newExample(ns, "stealth")
	obj.Labels = map[string]string{"app": "other"}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Consistently(func() int { return requests.Writes("") }, 2*time.Second).Should(BeZero())
	g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(BeEmpty())
	g.Expect(statusField(g, key, "gopf")).To(BeNil())

	// Starting to match is a creation, not an update.
	g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"mine"}}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return statusTrue(g, key, "create", "ok") }, timeout).Should(BeTrue())
	g.Expect(cs.Count("update")).To(Equal(0))
	g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(ContainElement("gopf.dev/finalizer"))
}

func TestWriteBudgetOfCreateUpdateDeleteAndIdle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "created"}, nil
	})
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": obj.Spec.Field}, nil
	})
	deleted := make(chan string, 10)
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		deleted <- obj.Name
		return map[string]any{"message": "deleted"}, nil
	})
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })
	requests.Reset()

	const n = 5
	var objs []*kopfv1.KopfExample
	for i := 0; i < n; i++ {
		obj := newExample(ns, "budget-"+string(rune('a'+i)))
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		objs = append(objs, obj)
	}
	for _, obj := range objs {
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(func(g Gomega) any { return statusField(g, key, "create_fn", "message") }, timeout).Should(Equal("created"))
		waitHandled(g, key)
	}
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).Should(Equal(2*n), "create: finalizer, then results and state: %v", requests.Snapshot())

	requests.Reset()
	for _, obj := range objs {
		patchSpec(g, obj, `{"field":"updated"}`)
	}
	for _, obj := range objs {
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(func(g Gomega) any { return statusField(g, key, "update_fn", "message") }, timeout).Should(Equal("updated"))
	}
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).
		Should(Equal(n), "update: one status patch: %v", requests.Snapshot())

	// Idle objects and no-op edits of status cost nothing.
	requests.Reset()
	g.Consistently(func() int { return requests.Writes("") }, 2*time.Second).Should(BeZero())

	requests.Reset()
	for _, obj := range objs {
		g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	}
	for _, obj := range objs {
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(func() bool { return k8s.Get(ctx, key, &kopfv1.KopfExample{}) != nil }, timeout).Should(BeTrue())
	}
	g.Expect(deleted).To(HaveLen(n))
	g.Expect(requests.Writes("kopfexamples", "kopfexamples/status")).To(Equal(n), "delete: the finalizer removal only: %v", requests.Snapshot())
}

func TestTemporaryFailureCostsOneWritePerAttempt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if c.Retry < 3 {
			return nil, handlers.Temporary(errors.New("again"), 100*time.Millisecond)
		}
		return nil, nil
	}, handlers.ID("flaky"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })
	obj := newExample(ns, "retry-writes")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	waitHandled(g, key)
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).Should(BeNumerically("<=", cs.Count("flaky")))
	g.Expect(cs.Count("flaky")).To(Equal(4))
}

func TestAChangeDuringARetryIsShownToHandlersThatAlreadySucceeded(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnUpdate(reg, recording(&cs, nil), handlers.ID("fast"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if c.Retry == 0 {
			return nil, handlers.Temporary(errors.New("later"), time.Second)
		}
		return nil, nil
	}, handlers.ID("slow"))
	runOperator(t, ns, reg)
	obj := newExample(ns, "overlap")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	waitHandled(g, key)

	patchSpec(g, obj, `{"field":"first"}`)
	g.Eventually(func() int { return cs.Count("slow") }, timeout).Should(Equal(1))
	patchSpec(g, obj, `{"duration":"second"}`) // while slow waits for its retry
	g.Eventually(func() int { return cs.Count("fast") }, timeout).Should(Equal(2))
	g.Eventually(func() int { return cs.Count("slow") }, timeout).Should(Equal(2))

	fast := cs.Of("fast")
	g.Expect(fast[0].Diff).To(Equal("[(change, spec.field, value, first)]"))
	g.Expect(fast[1].Diff).To(Equal("[(add, spec.duration, <nil>, second)]"), "fast sees just the newer change")
	slow := cs.Of("slow")
	g.Expect(slow[1].Diff).To(Equal("[(add, spec.duration, <nil>, second) (change, spec.field, value, first)]"), "slow's retry sees both changes")
}

func TestLevelHandlerRunsOnEveryReconcileWithTheSamePatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		c.Memo.Set("seen-by-create", true)
		return nil, nil
	}, handlers.ID("create"))
	handlers.OnReconcile(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (reconcile.Result, error) {
		cs.Record(c)
		if c.Memo.Get("seen-by-create") == true && c.Reason == handlers.ReasonCreate {
			value := "yes"
			c.Patch.SetLabel("reconciled", &value)
			_ = c.Patch.Set("status.level", map[string]any{"cause": string(c.Reason)})
		}
		return reconcile.Result{}, nil
	}, handlers.ID("level"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "level")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
		return obj.Labels
	}, timeout).Should(HaveKeyWithValue("reconciled", "yes"))
	g.Eventually(func(g Gomega) any { return statusField(g, key, "level", "cause") }, timeout).Should(Equal("create"))
	before := cs.Count("level")
	g.Expect(k8s.Status().Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"poke":1}}`)))).To(Succeed())
	g.Eventually(func() int { return cs.Count("level") }, timeout).Should(BeNumerically(">", before))
	g.Expect(cs.Count("create")).To(Equal(1))
}

func TestBadStoredStateIsReportedAndTheObjectHandledAsNew(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, map[string]any{"ok": true}), handlers.ID("create"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "bad-state")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	waitHandled(g, key)
	g.Expect(k8s.Status().Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"gopf":{"lastHandled":"{truncated"}}}`)))).To(Succeed())

	g.Eventually(func() int { return cs.Count("create") }, timeout).Should(Equal(2))
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "lastHandled") }, timeout).Should(HavePrefix("{\"spec\""))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, obj.Name) }, timeout).Should(ContainElement("BadStoredState"))
}

func TestStateMovesToAnnotationsWhenTheStatusSchemaDropsIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("pod_create"))
	runOperator(t, ns, reg)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
	}
	g.Expect(k8s.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		return pod.Annotations
	}, timeout).Should(HaveKey("gopf.dev/last-handled-configuration"))
	g.Consistently(func() int { return cs.Count("pod_create") }, time.Second).Should(Equal(1))
}

func TestStateTooLargeForAnnotationsIsKeptCompact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("cm_create"))
	runOperator(t, ns, reg)

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "huge"},
		Data:       map[string]string{"blob": strings.Repeat("x", 300*1024)},
	}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		return cm.Annotations["gopf.dev/last-handled-configuration"]
	}, timeout).Should(HavePrefix(`{"$gopf":{"bytes":`))
	g.Consistently(func() int { return cs.Count("cm_create") }, time.Second).Should(Equal(1))
	g.Expect(eventReasons(g, ns, cm.Name)).NotTo(ContainElement("StateTooLarge"))
}

// eventReasons lists the reasons of events about the named object.
func eventReasons(g Gomega, ns, name string) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

func TestAnnotationStorageKeepsStateOutOfStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, map[string]any{"ok": true}), handlers.ID("create"))
	handlers.OnUpdate(reg, recording(&cs, nil), handlers.ID("update"))
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.Storage = gopfreconcile.StorageAnnotations })

	obj := newExample(ns, "annotated")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
		return obj.Annotations
	}, timeout).Should(HaveKey("gopf.dev/last-handled-configuration"))
	g.Expect(statusTrue(g, key, "create", "ok")).To(BeTrue())
	g.Expect(statusField(g, key, "gopf")).To(BeNil())
	patchSpec(g, obj, `{"field":"changed"}`)
	g.Eventually(func() int { return cs.Count("update") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("update")[0].Diff).To(Equal("[(change, spec.field, value, changed)]"), "gopf's own annotations are not part of the essence")
}
