package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// Graceful stops and shard names held twice: the guarantees of
// docs/sharding.md for the everyday operations of a sharded Deployment
// (a rolling update, two replicas given one name).

// leaseHolder returns the holder identity of a shard's Lease, "" when it
// is released.
func leaseHolder(g Gomega, ns, shard string) string {
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: shard}, lease)).To(Succeed())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// A shard that stops gracefully while a handler runs keeps its Lease until
// the call has returned and its outcome is stored, whether the handler
// watches its context or not: its context is not cancelled by the stop,
// the call is not a failure, and it is the only call. Nothing new starts
// once the stop began: an object that arrives meanwhile is handled by the
// next holder of its shard.
func TestAShardStoppingGracefullyFinishesItsCallsBeforeItLetsGo(t *testing.T) {
	for name, watchesContext := range map[string]bool{"watching its context": true, "ignoring its context": false} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			var calls shardCalls
			started, release := make(chan struct{}), make(chan struct{})
			var startOnce, releaseOnce sync.Once
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
			var cancelled atomic.Bool
			reg := handlers.NewRegistry()
			handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
				calls.add("old", "create", obj.Name)
				if obj.Name != "inflight" {
					return "by old", nil
				}
				startOnce.Do(func() { close(started) })
				if watchesContext {
					select {
					case <-ctx.Done():
						cancelled.Store(true)
						return nil, ctx.Err()
					case <-release:
					}
				} else {
					<-release
				}
				return "by old", nil
			}, handlers.ID("create_fn"))
			old, err := envtest.RunOperator(context.Background(), cfg, reg, envtest.OperatorOptions{
				Scheme: scheme, Namespaces: []string{ns},
				Reconcile: reconcile.Options{Sharding: &reconcile.Sharding{Ring: "test-ring", Shard: "shard-a", Namespace: ns, ExternalAssigner: true}},
			})
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() {
				releaseOnce.Do(func() { close(release) })
				_ = old.Stop()
			})

			inflight := createOnShard(g, ns, "inflight", "shard-a")
			g.Eventually(started, timeout).Should(BeClosed())
			stopped := make(chan error, 1)
			go func() { stopped <- old.Stop() }()
			late := createOnShard(g, ns, "late", "shard-a")
			g.Consistently(func(g Gomega) string { return leaseHolder(g, ns, "shard-a") }, settle, 100*time.Millisecond).
				Should(Equal("shard-a"), "the stopping shard let go of its Lease while its handler ran")
			g.Expect(calls.of("late")).To(BeEmpty(), "the stopping shard started a call after the stop began")

			releaseOnce.Do(func() { close(release) })
			g.Eventually(stopped, timeout).Should(Receive(Succeed()))
			g.Expect(cancelled.Load()).To(BeFalse(), "the graceful stop cancelled the handler in flight")
			g.Expect(statusField(g, inflight, "create_fn")).To(Equal("by old"), "the outcome of the call in flight was not stored")
			g.Expect(leaseHolder(g, ns, "shard-a")).To(BeEmpty(), "the stopped shard kept its Lease")

			// The next holder of the shard (a new Pod of the same name, or
			// the shard the objects move to) goes on from there.
			runOperator(t, ns, recordingRegistry("new", &calls), func(o *envtest.OperatorOptions) {
				o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: "shard-a", Namespace: ns, ExternalAssigner: true}
			})
			waitHandled(g, late)
			g.Consistently(func() []string { return calls.of("inflight") }, settle).Should(Equal([]string{"old create"}))
			g.Expect(calls.of("late")).To(Equal([]string{"new create"}))
		})
	}
}

// Two processes given one shard name (a Deployment whose args name the
// shard, two local replicas on one host) never both work: the first holds
// the shard's Lease, the second waits and handles nothing until the first
// leaves; then it goes on from the stored state.
func TestTwoReplicasWithOneShardNameNeverBothCallAHandler(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var calls shardCalls
	sharding := func(o *envtest.OperatorOptions) {
		o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: "twice", Namespace: ns, ExternalAssigner: true}
	}
	first := runOperator(t, ns, recordingRegistry("first", &calls), sharding)
	g.Eventually(func(g Gomega) string { return leaseHolder(g, ns, "twice") }, timeout).Should(Equal("twice"))
	runOperator(t, ns, recordingRegistry("second", &calls), sharding)

	var keys []types.NamespacedName
	for i := range 6 {
		keys = append(keys, createOnShard(g, ns, fmt.Sprintf("o%d", i), "twice"))
	}
	for _, key := range keys {
		waitHandled(g, key)
	}
	for _, key := range keys {
		changeSpec(g, key, "changed")
	}
	for _, key := range keys {
		g.Eventually(func() []string { return calls.of(key.Name) }, timeout).Should(HaveLen(2))
	}
	g.Consistently(func() [][]string {
		var all [][]string
		for _, key := range keys {
			all = append(all, calls.of(key.Name))
		}
		return all
	}, settle).Should(HaveEach(Equal([]string{"first create", "first update"})), "the second process worked on the shard it does not hold")

	// The first leaves: the second holds the shard and handles the next change.
	g.Expect(first.Stop()).To(Succeed())
	changeSpec(g, keys[0], "again")
	g.Eventually(func() []string { return calls.of(keys[0].Name) }, timeout).
		Should(Equal([]string{"first create", "first update", "second update"}))
}
