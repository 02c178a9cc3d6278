package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// The labels of the reference sharding design, as the test writes them
// in the sharder's place.
const (
	shardLabel = "shard.alpha.sharding.timebertt.dev/test-ring"
	drainLabel = "drain.alpha.sharding.timebertt.dev/test-ring"
	ringLabel  = "alpha.sharding.timebertt.dev/controllerring"
)

// shardCalls records which shard called which handler on which object.
type shardCalls struct {
	mu    sync.Mutex
	calls map[string][]string // object name → "shard handler" in order
}

func (s *shardCalls) add(shard, handler, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string][]string{}
	}
	s.calls[name] = append(s.calls[name], shard+" "+handler)
}

func (s *shardCalls) of(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls[name]...)
}

// runShard runs one shard of test-ring in ns: create, update and daemon
// handlers that record their calls. The create handler of an object named
// "slow" waits for release on its first call.
func runShard(t *testing.T, ns, name string, calls *shardCalls, started chan<- string, release <-chan struct{}, stops chan<- string,
	sharding reconcile.Sharding) *envtest.Operator {
	reg := handlers.NewRegistry()
	var once sync.Once
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(name, "create", obj.Name)
		if obj.Name == "slow" {
			once.Do(func() {
				started <- name
				<-release
			})
		}
		return "created by " + name, nil
	}, handlers.ID("create_fn"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(name, "update", obj.Name)
		return nil, nil
	}, handlers.ID("update_fn"))
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		calls.add(name, "daemon", c.Name)
		<-d.Stopping()
		stops <- name + " " + c.Name + " " + string(d.StopReason())
		return nil
	}, handlers.ID("watch"), handlers.Field("spec.field"), handlers.Value("watched"))
	sharding.Ring, sharding.Shard, sharding.Namespace = "test-ring", name, ns
	return runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.Sharding = &sharding })
}

// setLabels sets (or, with "", removes) labels of a KopfExample, as the
// sharder does.
func setLabels(g Gomega, key types.NamespacedName, labels map[string]string) {
	obj := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	for k, v := range labels {
		if v == "" {
			delete(obj.Labels, k)
		} else {
			obj.Labels[k] = v
		}
	}
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
}

// waitRing waits until the shards, and only they, hold Leases of
// test-ring in ns: members of the ring. An operator runs once its caches
// have synced, which may be before its shard has taken its Lease.
func waitRing(g Gomega, ns string, shards ...string) {
	g.Eventually(func(g Gomega) []string {
		var leases coordinationv1.LeaseList
		g.Expect(k8s.List(context.Background(), &leases, client.InNamespace(ns), client.MatchingLabels{ringLabel: "test-ring"})).To(Succeed())
		var names []string
		for _, l := range leases.Items {
			names = append(names, l.Name)
		}
		return names
	}, timeout).Should(ConsistOf(shards), "the shards never all held their Leases")
}

// Two shards of one ring, with the test acting as the reference design's
// sharder: each shard holds its Lease and handles only the objects
// labelled for it; an object being drained while its create handler runs
// keeps that handler's outcome, loses its daemon (told why), and is handed
// back with both labels gone; the shard it then goes to does not run the
// create again, and handles its next change.
func TestShardsHandleTheirOwnObjectsAndHandOverWhenDrained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls shardCalls
	started, release, stops := make(chan string, 2), make(chan struct{}), make(chan string, 4)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the operators stop
	external := reconcile.Sharding{ExternalAssigner: true}
	runShard(t, ns, "shard-a", &calls, started, release, stops, external)
	runShard(t, ns, "shard-b", &calls, started, release, stops, external)

	waitRing(g, ns, "shard-a", "shard-b")

	for name, shard := range map[string]string{"a1": "shard-a", "b1": "shard-b", "none": ""} {
		obj := newExample(ns, name)
		if shard != "" {
			obj.Labels = map[string]string{shardLabel: shard}
		}
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	waitHandled(g, types.NamespacedName{Namespace: ns, Name: "a1"})
	waitHandled(g, types.NamespacedName{Namespace: ns, Name: "b1"})
	g.Expect(calls.of("a1")).To(Equal([]string{"shard-a create"}))
	g.Expect(calls.of("b1")).To(Equal([]string{"shard-b create"}))
	g.Expect(statusField(g, types.NamespacedName{Namespace: ns, Name: "none"}, "gopf")).To(BeNil(), "an unassigned object was handled")
	g.Expect(calls.of("none")).To(BeEmpty())

	// The drain handshake with a create handler in flight.
	slow := newExample(ns, "slow")
	slow.Labels = map[string]string{shardLabel: "shard-a"}
	g.Expect(k8s.Create(ctx, slow)).To(Succeed())
	key := client.ObjectKeyFromObject(slow)
	g.Eventually(started, timeout).Should(Receive(Equal("shard-a")))
	setLabels(g, key, map[string]string{drainLabel: "true"})
	releaseOnce.Do(func() { close(release) })
	waitReleased := func(key types.NamespacedName) {
		g.Eventually(func(g Gomega) map[string]string {
			obj := &kopfv1.KopfExample{}
			g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
			return obj.Labels
		}, timeout).ShouldNot(Or(HaveKey(shardLabel), HaveKey(drainLabel)), "the drain of %s was never acknowledged", key.Name)
	}
	waitReleased(key)
	g.Expect(statusField(g, key, "create_fn")).To(Equal("created by shard-a"), "the handler in flight lost its outcome")

	setLabels(g, key, map[string]string{shardLabel: "shard-b"})
	obj := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Items = []string{"changed"}
	g.Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
	g.Eventually(func() []string { return calls.of("slow") }, timeout).Should(ContainElement("shard-b update"))
	g.Consistently(func() []string { return calls.of("slow") }, time.Second, 100*time.Millisecond).
		Should(Equal([]string{"shard-a create", "shard-b update"}), "a handler ran twice, or on the wrong shard")

	// The drain handshake with a daemon running: it is told why it stops.
	watched := newExample(ns, "watched")
	watched.Labels, watched.Spec.Field = map[string]string{shardLabel: "shard-a"}, "watched"
	g.Expect(k8s.Create(ctx, watched)).To(Succeed())
	key = client.ObjectKeyFromObject(watched)
	g.Eventually(func() []string { return calls.of("watched") }, timeout).Should(ContainElement("shard-a daemon"))
	setLabels(g, key, map[string]string{drainLabel: "true"})
	g.Eventually(stops, timeout).Should(Receive(Equal("shard-a watched handed over")))
	waitReleased(key)
	setLabels(g, key, map[string]string{shardLabel: "shard-b"})
	g.Eventually(func() []string { return calls.of("watched") }, timeout).Should(ContainElement("shard-b daemon"))
	g.Expect(calls.of("watched")).To(Equal([]string{"shard-a create", "shard-a daemon", "shard-b daemon"}))
}

// With gopf's own assigner, new objects are spread over the shards and
// each is handled by the shard it lands on; when a shard leaves, its
// objects move to the other at once, which does not run their create
// handlers again.
func TestTheEmbeddedAssignerSpreadsObjectsAndMovesThoseOfAShardThatLeaves(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls shardCalls
	started, release, stops := make(chan string, 2), make(chan struct{}), make(chan string, 64)
	close(release)
	a := runShard(t, ns, "shard-a", &calls, started, release, stops, reconcile.Sharding{})
	runShard(t, ns, "shard-b", &calls, started, release, stops, reconcile.Sharding{})
	// The assigner spreads objects over the shards in the ring when they
	// come: objects created before shard-b holds its Lease all go to
	// shard-a (and half of them move when shard-b joins).
	waitRing(g, ns, "shard-a", "shard-b")

	// The ring hashes names within a random namespace: 24 objects all land
	// on one of two shards about once in 10^7 runs (12 did once in 1,900).
	const n = 24
	var keys []types.NamespacedName
	for i := range n {
		obj := newExample(ns, "spread-"+string(rune('a'+i)))
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(obj))
	}
	// The assigner learns of shard-b's Lease through its own watch, which
	// may lag the test's read by a moment under load; an object it placed
	// on shard-a meanwhile is drained and moved by the pass that follows,
	// without a second create. So the test waits for every object to be
	// handled and settled on a shard, not draining.
	g.Eventually(func(g Gomega) map[string]int {
		onShard := map[string]int{}
		for _, key := range keys {
			g.Expect(statusField(g, key, "gopf", "lastHandled")).NotTo(BeNil(), "%s is not handled", key.Name)
			obj := &kopfv1.KopfExample{}
			g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
			g.Expect(obj.Labels).NotTo(HaveKey(drainLabel), "%s is draining", key.Name)
			onShard[obj.Labels[shardLabel]]++
		}
		return onShard
	}, timeout).Should(And(HaveLen(2), HaveKey("shard-a"), HaveKey("shard-b")), "the %d objects were not spread over both shards", n)
	for _, key := range keys {
		g.Expect(calls.of(key.Name)).To(ConsistOf(BeElementOf("shard-a create", "shard-b create")), "%s: one create, on either shard", key.Name)
	}

	g.Expect(a.Stop()).To(Succeed())
	for _, key := range keys {
		g.Eventually(func(g Gomega) string {
			obj := &kopfv1.KopfExample{}
			g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
			return obj.Labels[shardLabel]
		}, timeout).Should(Equal("shard-b"), "%s never moved to the shard left", key.Name)
	}
	obj := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(ctx, keys[0], obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Items = []string{"changed"}
	g.Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
	g.Eventually(func() []string { return calls.of(keys[0].Name) }, timeout).Should(ContainElement("shard-b update"))
	for _, key := range keys {
		creates := 0
		for _, c := range calls.of(key.Name) {
			if c == "shard-a create" || c == "shard-b create" {
				creates++
			}
		}
		g.Expect(creates).To(Equal(1), "create handler calls of %s: %v", key.Name, calls.of(key.Name))
	}
}
