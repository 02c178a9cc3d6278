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
	"github.com/gopf-dev/gopf/reconcile"
)

// A shard stores what it knows of an object before it hands it over: here
// the attempts of a handler whose quiet retries were counted in memory
// only, so that the next shard counts on from the last attempt, not from
// the last one written. (A delete handler's outcome whose write failed
// took the same path, and a second shard ran it again.)
func TestAShardStoresWhatItHasNotWrittenBeforeItHandsAnObjectOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls envtest.Calls
	drained := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(drained) }) }
	t.Cleanup(release)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		if c.Retry == 5 {
			<-drained
		}
		return nil, handlers.Temporary(errors.New("not yet"), 20*time.Millisecond)
	}, handlers.ID("stubborn"))
	sharding := reconcile.Sharding{Ring: "test-ring", Shard: "shard-a", Namespace: ns, ExternalAssigner: true}
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.Sharding = &sharding })

	obj := newExample(ns, "stubborn")
	obj.Labels = map[string]string{shardLabel: "shard-a"}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func() int { return calls.Count("stubborn") }, timeout).Should(Equal(6))
	// The sixth call waits for the drain. Stored: the 4th failure; the
	// 5th is counted in memory, and so is the 6th once the call returns.
	g.Expect(statusField(g, key, "gopf", "progress", "stubborn", "retries")).To(BeNumerically("==", 4))
	setLabels(g, key, map[string]string{drainLabel: "true"})
	release()
	g.Eventually(func(g Gomega) map[string]string {
		got := &kopfv1.KopfExample{}
		g.Expect(k8s.Get(ctx, key, got)).To(Succeed())
		return got.Labels
	}, timeout).ShouldNot(Or(HaveKey(shardLabel), HaveKey(drainLabel)))
	g.Expect(statusField(g, key, "gopf", "progress", "stubborn", "retries")).To(BeNumerically("==", 6))
	g.Expect(calls.Count("stubborn")).To(Equal(6), "the shard called a handler of an object it was handing over")
}
