package reconcile_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// A handler call that the operator's stop cancels is not an attempt: no
// retry is counted, no backoff stored, and the next operator calls the
// handler again at once rather than after the default backoff (60 s).
func TestACallCutByTheOperatorsStopIsNotAFailedAttempt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	started := make(chan struct{})
	cut := handlers.NewRegistry()
	handlers.OnCreate(cut, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}, handlers.ID("create_fn"))
	op, err := envtest.RunOperator(context.Background(), cfg, cut, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

	obj := newExample(ns, "cut")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(started, timeout).Should(BeClosed())
	g.Expect(op.Stop()).To(Succeed())
	g.Expect(statusField(g, key, "gopf", "progress", "create_fn", "retries")).To(BeNil(), "the cut call was counted as an attempt")
	g.Expect(statusField(g, key, "gopf", "progress", "create_fn", "delayed")).To(BeNil(), "the cut call was given a backoff")

	var mu sync.Mutex
	var retries []int
	again := handlers.NewRegistry()
	handlers.OnCreate(again, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		retries = append(retries, c.Retry)
		return "done", nil
	}, handlers.ID("create_fn"))
	runOperator(t, ns, again)
	waitHandled(g, key)
	mu.Lock()
	defer mu.Unlock()
	g.Expect(retries).To(Equal([]int{0}), "the handler's calls after the restart, by retry")
}
