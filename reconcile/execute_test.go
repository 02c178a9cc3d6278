package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// trail records the order of calls across handlers.
type trail struct {
	mu  sync.Mutex
	ids []string
}

func (tr *trail) add(id string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.ids = append(tr.ids, id)
}

func (tr *trail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.ids...)
}

func TestExecutedSubHandlersRunInOrderWithinTheParentUntilAllAreDone(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	var order trail
	executed := make(chan error, 10) // what each call of the parent got from Execute
	step := func(name string) func(context.Context, *handlers.Cause) (any, error) {
		return func(ctx context.Context, sc *handlers.Cause) (any, error) {
			cs.Record(sc)
			order.add(sc.HandlerID)
			if name == "b" && sc.Retry == 0 {
				return nil, handlers.Temporary(errors.New("not yet"), 300*time.Millisecond)
			}
			return map[string]any{"step": name}, nil
		}
	}
	nested := func(ctx context.Context, sc *handlers.Cause) (any, error) {
		cs.Record(sc)
		order.add(sc.HandlerID)
		if err := sc.Execute(ctx, handlers.Sub("deep", step("deep"))); err != nil {
			return nil, err
		}
		return map[string]any{"step": "c"}, nil
	}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		order.add(c.HandlerID)
		err := c.Execute(ctx,
			handlers.Sub("a", step("a")),
			handlers.Sub("b", step("b"), handlers.Retries(3)),
			handlers.Sub("c", nested),
		)
		executed <- err
		if err != nil {
			return nil, err
		}
		// The sub-handlers' results, this reconcile's and earlier ones'.
		var steps []any
		for _, id := range []string{"a", "b", "c", "c/deep"} {
			r, ok := c.Result(c.HandlerID + "/" + id)
			if !ok {
				return nil, handlers.Permanent(errors.New("no result of " + id))
			}
			steps = append(steps, r.(map[string]any)["step"])
		}
		return map[string]any{"steps": steps}, nil
	}, handlers.ID("parent"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })

	obj := newExample(ns, "executing")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "parent", "steps") }, timeout).Should(Equal([]any{"a", "b", "c", "deep"}))
	waitHandled(g, key)

	var first, second error
	g.Expect(executed).To(Receive(&first))
	g.Expect(errors.Is(first, handlers.ErrSubHandlersUnfinished)).To(BeTrue(), "first Execute: %v", first)
	g.Expect(first.Error()).To(ContainSubstring("parent/b"))
	g.Expect(executed).To(Receive(&second))
	g.Expect(second).NotTo(HaveOccurred())
	g.Expect(executed).NotTo(Receive(), "the parent is done once all its sub-handlers are")

	g.Expect(order.get()).To(Equal([]string{
		"parent", "parent/a", "parent/b", "parent/c", "parent/c/deep", // all now, in order
		"parent", "parent/b", // again only for the one that asked for a retry
	}))
	g.Expect(cs.Of("parent")[1].Retry).To(BeZero(), "waiting for sub-handlers is not a failed attempt")
	g.Expect(cs.Of("parent/b")[1].Retry).To(Equal(1))
	for _, id := range []string{"a", "b", "c"} {
		g.Expect(statusField(g, key, "parent/"+id, "step")).To(Equal(id))
	}
	g.Expect(statusField(g, key, "parent/c/deep", "step")).To(Equal("deep"))
	g.Expect(statusField(g, key, "gopf", "progress")).To(BeNil())
	// One status write per reconcile that ran handlers: the first keeps the
	// progress (a, c and deep done, b due again) with their results, the
	// second b's result and the handled essence. No finalizer: nothing
	// needs one.
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).Should(Equal(2), "%v", requests.Snapshot())
}

func TestAPermanentFailureOfAnExecutedSubHandlerFailsItsParent(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		ok := func(ctx context.Context, sc *handlers.Cause) (any, error) { cs.Record(sc); return nil, nil }
		return nil, c.Execute(ctx,
			handlers.Sub("a", ok),
			handlers.Sub("b", func(ctx context.Context, sc *handlers.Cause) (any, error) {
				cs.Record(sc)
				return nil, handlers.Permanent(errors.New("broken for good"))
			}),
			handlers.Sub("c", ok),
		)
	}, handlers.ID("parent"))
	// Keeps the cause unfinished, so that its progress stays to be read.
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Temporary(errors.New("later"), time.Hour)
	}, handlers.ID("hold"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "failing")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) bool { return statusTrue(g, key, "gopf", "progress", "parent", "failure") }, timeout).Should(BeTrue())
	g.Expect(statusField(g, key, "gopf", "progress", "parent", "message")).To(And(ContainSubstring("parent/b"), ContainSubstring("broken for good")))
	g.Expect(statusTrue(g, key, "gopf", "progress", "parent/b", "failure")).To(BeTrue())
	g.Expect(statusTrue(g, key, "gopf", "progress", "parent/a", "success")).To(BeTrue())
	g.Expect(statusTrue(g, key, "gopf", "progress", "parent/c", "success")).To(BeTrue())
	g.Consistently(func() []int {
		return []int{cs.Count("parent"), cs.Count("parent/a"), cs.Count("parent/b"), cs.Count("parent/c")}
	}, time.Second).Should(Equal([]int{1, 1, 1, 1}), "a failed parent is not called again")
}
