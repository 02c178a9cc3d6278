package reconcile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	peers "github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/reconcile"
)

// runRecordingShard runs shard name of test-ring in ns with one create
// handler that records its calls; the test labels the objects, as the
// reference sharder would. more adds options.
func runRecordingShard(t *testing.T, ns, name string, calls *shardCalls, more ...func(*envtest.OperatorOptions)) *envtest.Operator {
	t.Helper()
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(name, "create", obj.Name)
		return "created by " + name, nil
	}, handlers.ID("create_fn"))
	sharding := &reconcile.Sharding{Ring: "test-ring", Shard: name, Namespace: ns, ExternalAssigner: true}
	opts := append([]func(*envtest.OperatorOptions){func(o *envtest.OperatorOptions) { o.Reconcile.Sharding = sharding }}, more...)
	return runOperator(t, ns, reg, opts...)
}

// createOnShard creates a KopfExample labelled for shard (unlabelled for
// "") and returns its key.
func createOnShard(g Gomega, ns, name, shard string) types.NamespacedName {
	obj := newExample(ns, name)
	if shard != "" {
		obj.Labels = map[string]string{shardLabel: shard}
	}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return types.NamespacedName{Namespace: ns, Name: name}
}

// The shards of a ring are one operator to peering: they take part with
// the same priority and do not pause one another, but a freeze pauses
// every one of them, and a resume lets every one work again.
func TestAFreezePausesEveryShardOfTheRingAndAResumeLetsThemAllWork(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	var calls shardCalls
	for _, name := range []string{"shard-a", "shard-b"} {
		runRecordingShard(t, ns, name, &calls, func(o *envtest.OperatorOptions) {
			o.Reconcile.Peering = &reconcile.PeeringOptions{Name: peering, Lifetime: 4 * time.Second, Identity: name}
		})
	}
	g.Eventually(func(g Gomega) map[string]any { return peeringStatus(g, "ClusterKopfPeering", "", peering) }, timeout).
		Should(And(HaveKey("shard-a"), HaveKey("shard-b")), "each shard is a peer")

	a1, b1 := createOnShard(g, ns, "a1", "shard-a"), createOnShard(g, ns, "b1", "shard-b")
	waitHandled(g, a1)
	waitHandled(g, b1)
	g.Expect(calls.of("a1")).To(Equal([]string{"shard-a create"}))
	g.Expect(calls.of("b1")).To(Equal([]string{"shard-b create"}), "shards of one ring paused one another")

	g.Expect(peers.Freeze(ctx, k8s, peering, nil, freeze("freeze@test", 0, "maintenance"))).To(Succeed())
	for _, name := range []string{"shard-a", "shard-b"} {
		g.Eventually(func(g Gomega) any { return peeringStatus(g, "ClusterKopfPeering", "", peering)[name] }, timeout).
			Should(HaveKeyWithValue("paused", true), "%s did not pause for a freeze of its own priority", name)
	}
	createOnShard(g, ns, "a2", "shard-a")
	createOnShard(g, ns, "b2", "shard-b")
	g.Consistently(func() [][]string { return [][]string{calls.of("a2"), calls.of("b2")} }, settle, 100*time.Millisecond).
		Should(Equal([][]string{nil, nil}), "a handler ran on a frozen shard")

	g.Expect(peers.Unfreeze(ctx, k8s, peering, nil, "freeze@test")).To(Succeed())
	g.Eventually(func() []string { return calls.of("a2") }, timeout).Should(Equal([]string{"shard-a create"}))
	g.Eventually(func() []string { return calls.of("b2") }, timeout).Should(Equal([]string{"shard-b create"}))
}

// shardInfo reads gopf_shard_info of a ring's shard, -1 when it has no
// series.
func shardInfo(g Gomega, ring, shard string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "gopf_shard_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["ring"] == ring && labels["shard"] == shard && len(labels) == 2 {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// A shard says which shard of which ring it is in gopf_shard_info, the
// series a dashboard joins onto the replica's other metrics.
func TestAShardNamesItselfInItsMetrics(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	g.Expect(shardInfo(g, "info-ring", "info-a")).To(BeNumerically("==", -1))
	runOperator(t, ns, tagging("info"), func(o *envtest.OperatorOptions) {
		o.Reconcile.Sharding = &reconcile.Sharding{Ring: "info-ring", Shard: "info-a", Namespace: ns, ExternalAssigner: true}
	})
	g.Expect(shardInfo(g, "info-ring", "info-a")).To(BeNumerically("==", 1))
	obj := newExample(ns, "counted")
	obj.Labels = map[string]string{"shard.alpha.sharding.timebertt.dev/info-ring": "info-a"}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag", "by") }, timeout).Should(Equal("info"))
}
