package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// recording returns a handler that records its calls and returns result.
func recording(cs *envtest.Calls, result any) handlers.HandlerFunc[*kopfv1.KopfExample] {
	return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return result, nil
	}
}

func patchSpec(g Gomega, obj client.Object, spec string) {
	g.Expect(k8s.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":`+spec+`}`)))).To(Succeed())
}

func TestUpdateHandlerReceivesTheExactDiff(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, nil), handlers.ID("create"))
	handlers.OnUpdate(reg, recording(&cs, map[string]any{"updated": true}), handlers.ID("update"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "diff")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	g.Eventually(func() int { return cs.Count("create") }, timeout).Should(Equal(1))
	key := client.ObjectKeyFromObject(obj)
	waitHandled(g, key)

	patchSpec(g, obj, `{"field":"changed"}`)
	g.Eventually(func(g Gomega) bool { return statusTrue(g, key, "update", "updated") }, timeout).Should(BeTrue())
	got := cs.Of("update")
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Reason).To(Equal(handlers.ReasonUpdate))
	g.Expect(got[0].Diff).To(Equal("[(change, spec.field, value, changed)]"))

	// Status changes are not changes of the essence.
	g.Expect(k8s.Status().Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"other":1}}`)))).To(Succeed())
	g.Consistently(func() int { return cs.Count("update") }, 2*time.Second).Should(Equal(1))
	g.Expect(cs.Count("create")).To(Equal(1))
}

func TestFieldHandlerFiresOnlyForItsFieldAndFilters(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnField(reg, "spec.field", recording(&cs, nil), handlers.ID("any"))
	handlers.OnField(reg, "spec.field", recording(&cs, nil), handlers.ID("x_to_y"), handlers.OldValue("x"), handlers.NewValue("y"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "field")
	obj.Spec.Field = "x"
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	// Creation with the field set is a change of the field from absent to x.
	g.Eventually(func() int { return cs.Count("any") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("any")[0].New).To(Equal("x"))

	patchSpec(g, obj, `{"items":["other"]}`) // not the field
	patchSpec(g, obj, `{"field":"y"}`)       // x → y
	g.Eventually(func() int { return cs.Count("x_to_y") }, timeout).Should(Equal(1))
	patchSpec(g, obj, `{"field":"x"}`) // y → x: not for x_to_y
	g.Eventually(func() int { return cs.Count("any") }, timeout).Should(Equal(3))
	patchSpec(g, obj, `{"field":"z"}`)
	g.Eventually(func() int { return cs.Count("any") }, timeout).Should(Equal(4))
	g.Consistently(func() int { return cs.Count("x_to_y") }, time.Second).Should(Equal(1))

	got := cs.Of("any")
	g.Expect(got[1].Old).To(Equal("x"))
	g.Expect(got[1].New).To(Equal("y"))
	g.Expect(got[1].Diff).To(Equal("[(change, , x, y)]"))
}

func TestDeleteHandlerRunsAndTheFinalizerGoes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	finalizerAtCreate := make(chan bool, 10)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		finalizerAtCreate <- len(obj.Finalizers) > 0
		return nil, nil
	}, handlers.ID("create"))
	handlers.OnDelete(reg, recording(&cs, nil), handlers.ID("delete"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "deleted")
	obj.Finalizers = []string{"example.com/other"}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(finalizerAtCreate, timeout).Should(Receive(BeTrue()), "the finalizer is there before the create handler runs")
	key := client.ObjectKeyFromObject(obj)
	g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(ConsistOf("example.com/other", "gopf.dev/finalizer"))

	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Eventually(func() int { return cs.Count("delete") }, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) []string {
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
		return obj.Finalizers
	}, timeout).Should(Equal([]string{"example.com/other"}), "gopf removes only its own finalizer")
	g.Expect(cs.Of("delete")[0].Reason).To(Equal(handlers.ReasonDelete))
}

func TestOptionalDeleteHandlerAddsNoFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, map[string]any{"ok": true}), handlers.ID("create"))
	handlers.OnDelete(reg, recording(&cs, nil), handlers.ID("delete"), handlers.Optional())
	runOperator(t, ns, reg)

	obj := newExample(ns, "optional")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) bool { return statusTrue(g, key, "create", "ok") }, timeout).Should(BeTrue())
	g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(BeEmpty())
}

func TestTemporaryErrorsAreRetriedAndTheCountSurvivesARestart(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	newRegistry := func() *handlers.Registry {
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			cs.Record(c)
			if c.Retry < 2 {
				return nil, handlers.Temporary(errors.New("not yet"), 300*time.Millisecond)
			}
			return map[string]any{"attempt": c.Retry + 1}, nil
		}, handlers.ID("flaky"))
		return reg
	}
	op := runOperator(t, ns, newRegistry())

	obj := newExample(ns, "flaky")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	// The first failure is stored; then the operator goes away.
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "progress", "flaky", "retries") }, timeout).Should(BeNumerically(">=", 1))
	g.Expect(op.Stop()).To(Succeed())
	retriesBefore := cs.Count("flaky")

	runOperator(t, ns, newRegistry())
	g.Eventually(func(g Gomega) any { return statusField(g, key, "flaky", "attempt") }, timeout).Should(BeNumerically("==", 3))
	got := cs.Of("flaky")
	g.Expect(got).To(HaveLen(3))
	for i, c := range got {
		g.Expect(c.Retry).To(Equal(i), "attempt %d after %d before the restart", i, retriesBefore)
	}
	// Done: the progress is gone, the essence stored.
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "progress") }, timeout).Should(BeNil())
}

func TestRetryAndTimeoutLimitsEndInARecordedFailure(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	failing := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, errors.New("always")
	}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, failing, handlers.ID("limited"), handlers.Retries(3), handlers.Backoff(100*time.Millisecond))
	handlers.OnCreate(reg, failing, handlers.ID("timed"), handlers.Timeout(time.Second), handlers.Backoff(300*time.Millisecond))
	handlers.OnCreate(reg, failing, handlers.ID("permanent"), handlers.Errors(handlers.ErrorsPermanent))
	handlers.OnCreate(reg, failing, handlers.ID("ignored"), handlers.Errors(handlers.ErrorsIgnored))
	handlers.OnCreate(reg, recording(&cs, map[string]any{"ran": true}), handlers.ID("fine"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "limits")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	// The cause completes once every handler has finished, failed or not.
	waitHandled(g, key)
	g.Expect(cs.Count("limited")).To(Equal(3))
	g.Expect(cs.Count("timed")).To(BeNumerically(">=", 2))
	g.Expect(cs.Count("timed")).To(BeNumerically("<=", 5))
	g.Expect(cs.Count("permanent")).To(Equal(1))
	g.Expect(cs.Count("ignored")).To(Equal(1))
	g.Expect(cs.Count("fine")).To(Equal(1))
	g.Expect(statusTrue(g, key, "fine", "ran")).To(BeTrue(), "a failing handler does not block the others")
}

func TestPermanentFailureIsRecordedWhileOthersRetry(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, handlers.Permanent(errors.New("bad spec"))
	}, handlers.ID("broken"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, handlers.Temporary(errors.New("wait"), time.Hour)
	}, handlers.ID("slow"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "permanent")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) bool { return statusTrue(g, key, "gopf", "progress", "broken", "failure") }, timeout).Should(BeTrue())
	g.Expect(statusField(g, key, "gopf", "progress", "broken", "message")).To(ContainSubstring("bad spec"))
	g.Expect(statusField(g, key, "gopf", "progress", "slow", "delayed")).NotTo(BeNil())
}

func TestSubHandlersHaveTheirOwnProgress(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		for _, item := range obj.Spec.Items {
			c.Register(item, func(ctx context.Context, sc *handlers.Cause) (any, error) {
				cs.Record(sc)
				if item == "item2" && sc.Retry == 0 {
					return nil, handlers.Temporary(errors.New("once"), 200*time.Millisecond)
				}
				return map[string]any{"item": item}, nil
			})
		}
		return nil, nil
	}, handlers.ID("parent"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "subs")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "parent/item2", "item") }, timeout).Should(Equal("item2"))
	waitHandled(g, key)
	g.Expect(statusField(g, key, "parent/item1", "item")).To(Equal("item1"))
	g.Expect(cs.Count("parent")).To(BeNumerically(">=", 2), "the parent is called again while a child is unfinished")
	g.Expect(cs.Count("parent/item1")).To(Equal(1))
	g.Expect(cs.Count("parent/item2")).To(Equal(2))
	g.Expect(statusField(g, key, "gopf", "progress")).To(BeNil())
}

// A hung call that honours its context is cut off by CallTimeout: the
// attempt fails as having run out of time, and the next attempt runs after
// the backoff.
func TestCallTimeoutEndsAHungCallWhichIsRetried(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	ended := make(chan error, 1)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if c.Retry == 0 {
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}
		return map[string]any{"attempt": c.Retry}, nil
	}, handlers.ID("hangs"), handlers.CallTimeout(300*time.Millisecond), handlers.Backoff(2*time.Second))
	runOperator(t, ns, reg)

	obj := newExample(ns, "hung")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(ended, timeout).Should(Receive(MatchError(context.DeadlineExceeded)))
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "progress", "hangs", "message") }, timeout).
		Should(ContainSubstring("CallTimeout (300ms)"))
	g.Eventually(func(g Gomega) any { return statusField(g, key, "hangs", "attempt") }, timeout).Should(BeNumerically("==", 1))
	g.Expect(cs.Count("hangs")).To(Equal(2))
}

// A handler that keeps failing with the same error costs a write on its
// 1st, 2nd, 4th and 8th attempt, not on every one; the attempts between
// are counted in memory, so the handler sees every retry number, and the
// success is stored as always.
func TestAHandlerThatKeepsFailingWritesOnlyOnEachDoublingOfItsAttempts(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if c.Retry < 9 {
			return nil, handlers.Temporary(errors.New("not yet"), 20*time.Millisecond)
		}
		return map[string]any{"attempts": c.Retry + 1}, nil
	}, handlers.ID("stubborn"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })

	obj := newExample(ns, "stubborn")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "stubborn", "attempts") }, timeout).Should(BeNumerically("==", 10))
	waitHandled(g, key)
	retries := []int{}
	for _, c := range cs.Of("stubborn") {
		retries = append(retries, c.Retry)
	}
	g.Expect(retries).To(Equal([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))
	// The records of attempts 1, 2, 4 and 8, and the success (no
	// finalizer: there is no delete handler); one per attempt would be 10.
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second, 100*time.Millisecond).
		Should(Equal(5), "requests: %v", requests.Snapshot())
}
