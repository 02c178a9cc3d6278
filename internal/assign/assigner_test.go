package assign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/gopf-dev/gopf/internal/shard"
)

const timeout = 30 * time.Second

// cluster is what a test works with: clients of the control plane and a
// namespace of its own, where its shards' Leases and objects live.
type cluster struct {
	t        *testing.T
	k8s      kubernetes.Interface
	metadata metadata.Interface
	ns       string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := apiServer(t)
	c := &cluster{t: t, k8s: kubernetes.NewForConfigOrDie(cfg), metadata: metadata.NewForConfigOrDie(cfg)}
	ns, err := c.k8s.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "assign-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.ns = ns.Name
	return c
}

// join starts shard's member of the test's ring and waits until it holds
// its Lease; the returned function stops it gracefully, releasing it.
func (c *cluster) join(shardName string) (leave func()) {
	c.t.Helper()
	m, err := shard.NewMember(c.k8s.CoordinationV1(), shard.MemberOptions{
		Ring: ring, Shard: shardName, Namespace: c.ns, Log: testr.New(c.t),
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return c.run(m.Start, m.Joined())
}

// assigner starts an assigner of the test's ring, which rescans every
// resync and rechecks drains every 200 ms.
func (c *cluster) assigner(resync time.Duration, change ...func(*Options)) (*Assigner, func()) {
	c.t.Helper()
	opts := Options{
		Ring: ring, Namespace: c.ns, Namespaces: []string{c.ns}, Kinds: kinds, Metadata: c.metadata, Leases: c.k8s.CoordinationV1(),
		ResyncPeriod: resync, DrainCheckPeriod: 200 * time.Millisecond, Log: testr.New(c.t),
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
	}
	for _, f := range change {
		f(&opts)
	}
	a, err := New(opts)
	if err != nil {
		c.t.Fatal(err)
	}
	return a, c.run(a.Start, nil)
}

// run runs start until the returned function or the test's end stops it,
// having waited for ready if it is not nil.
func (c *cluster) run(start func(context.Context) error, ready <-chan struct{}) (stop func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				c.t.Errorf("stopping: %v", err)
			}
		}
	}
	c.t.Cleanup(stop)
	if ready != nil {
		NewWithT(c.t).Eventually(ready, timeout).Should(BeClosed())
	}
	return stop
}

// family creates n ConfigMaps, each with a Secret it controls, and
// returns their keys on the ring by object.
func (c *cluster) family(n int, labels map[string]string) map[types.NamespacedName]string {
	c.t.Helper()
	keys := map[types.NamespacedName]string{}
	for i := range n {
		cm, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		key, _ := shard.ObjectKey(configMaps.GroupKind, cm)
		keys[types.NamespacedName{Namespace: "configmaps", Name: cm.Name}] = key
		refs := controlledBy("v1", "ConfigMap", cm.Name)
		refs[0].UID = cm.UID
		s := c.secret(fmt.Sprintf("child-of-%s", cm.Name), refs, labels)
		keys[types.NamespacedName{Namespace: "secrets", Name: s}] = key
	}
	return keys
}

func (c *cluster) secret(name string, refs []metav1.OwnerReference, labels map[string]string) string {
	c.t.Helper()
	_, err := c.k8s.CoreV1().Secrets(c.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return name
}

// labels returns the labels and resourceVersion of every ConfigMap and
// Secret of the test, by resource ("configmaps", "secrets") and name.
func (c *cluster) labels(g Gomega) map[types.NamespacedName]metav1.ObjectMeta {
	out := map[types.NamespacedName]metav1.ObjectMeta{}
	for _, k := range kinds {
		list, err := c.metadata.Resource(k.Resource).Namespace(c.ns).List(context.Background(), metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, o := range list.Items {
			out[types.NamespacedName{Namespace: k.Resource.Resource, Name: o.Name}] = o.ObjectMeta
		}
	}
	return out
}

// acknowledge lets go of the object of kind k and name, as its shard
// acknowledges a drain: both labels removed.
func (c *cluster) acknowledge(g Gomega, k Kind, name string) {
	ack := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null,%q:null}}}`, shard.ShardLabel(ring), shard.DrainLabel(ring)))
	_, err := c.metadata.Resource(k.Resource).Namespace(c.ns).Patch(context.Background(), name, types.MergePatchType, ack, metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// placed expects every object of keys on the shard that r picks for its
// key, not draining.
func (c *cluster) placed(g Gomega, keys map[types.NamespacedName]string, r *shard.Ring) {
	objs := c.labels(g)
	for id, key := range keys {
		g.Expect(objs[id].Labels).To(HaveKeyWithValue(shard.ShardLabel(ring), r.ShardFor(key)), "%s", id)
		g.Expect(objs[id].Labels).NotTo(HaveKey(shard.DrainLabel(ring)), "%s", id)
	}
}

func TestUnassignedObjectsGoWhereTheRingPlacesThemAndChildrenWithTheirController(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.join("b")
	c.assigner(300 * time.Millisecond)

	// Objects created while the assigner runs are all placed, children of
	// no ConfigMap left alone.
	orphan := c.secret("orphan", nil, nil)
	stranger := c.secret("stranger", controlledBy("apps/v1", "Deployment", "web"), nil)
	keys := c.family(10, nil)
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a", "b")) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		objs := c.labels(g)
		for _, s := range []string{orphan, stranger} {
			g.Expect(objs[types.NamespacedName{Namespace: "secrets", Name: s}].Labels).To(BeEmpty(), "secret %s has no controller of the ring", s)
		}
	}, time.Second, 200*time.Millisecond).Should(Succeed())
	objs := c.labels(g)
	byShard := map[string]int{}
	for id := range keys {
		byShard[objs[id].Labels[shard.ShardLabel(ring)]]++
	}
	g.Expect(byShard).To(HaveLen(2), "both shards get objects")

	// Another, created later, is placed as it appears.
	late, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	key, _ := shard.ObjectKey(configMaps.GroupKind, late)
	g.Eventually(func(g Gomega) {
		c.placed(g, map[types.NamespacedName]string{{Namespace: "configmaps", Name: "late"}: key}, shard.NewRing("a", "b"))
	}, timeout).Should(Succeed())
}

func TestTheObjectsOfAShardThatLeavesMoveAtOnceAndNoOthers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	leaveA := c.join("a")
	c.join("b")
	keys := c.family(10, nil)
	c.assigner(time.Hour) // no resync: only the ring's change moves objects
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a", "b")) }, timeout).Should(Succeed())
	before := c.labels(g)

	leaveA()
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("b")) }, timeout).Should(Succeed())
	for id, meta := range c.labels(g) {
		if was := before[id]; was.Labels[shard.ShardLabel(ring)] == "b" {
			g.Expect(meta.ResourceVersion).To(Equal(was.ResourceVersion), "%s stayed on b and was not written", id)
		}
	}
}

func TestTheLeaseOfAnUncertainShardIsClaimedAndItsObjectsMove(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	// A shard that stopped renewing an hour ago and never released.
	past := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	_, err := c.k8s.CoordinationV1().Leases(c.ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost", Labels: map[string]string{shard.RingLabel: ring}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), LeaseDurationSeconds: ptr.To(int32(2)),
			AcquireTime: &past, RenewTime: &past},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	keys := c.family(5, map[string]string{shard.ShardLabel(ring): "ghost", shard.DrainLabel(ring): "true"})
	c.assigner(time.Hour)

	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a")) }, timeout).Should(Succeed())
	l, err := c.k8s.CoordinationV1().Leases(c.ns).Get(context.Background(), "ghost", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Spec.HolderIdentity).To(HaveValue(Equal(shard.ClaimIdentity)))
}

func TestObjectsMoveToAJoiningShardOnlyAfterTheirShardLetGo(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.join("b")
	keys := c.family(15, nil)
	c.assigner(time.Hour)
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a", "b")) }, timeout).Should(Succeed())

	c.join("c")
	after := shard.NewRing("a", "b", "c")
	movers := map[types.NamespacedName]string{}
	stayers := map[types.NamespacedName]string{}
	for id, key := range keys {
		if after.ShardFor(key) == "c" {
			movers[id] = key
		} else {
			stayers[id] = key
		}
	}
	g.Expect(movers).NotTo(BeEmpty())

	// The main objects that move are asked to drain, still on their shard;
	// none is on c yet, since no shard has let go. Their children move at
	// once: nothing runs on a child itself.
	before := shard.NewRing("a", "b")
	children := map[types.NamespacedName]string{}
	for id, key := range movers {
		if id.Namespace == "secrets" {
			children[id] = key
			delete(movers, id)
		}
	}
	g.Eventually(func(g Gomega) {
		objs := c.labels(g)
		for id, key := range movers {
			g.Expect(objs[id].Labels).To(HaveKeyWithValue(shard.ShardLabel(ring), before.ShardFor(key)), "%s", id)
			g.Expect(objs[id].Labels).To(HaveKey(shard.DrainLabel(ring)), "%s", id)
		}
		c.placed(g, children, after)
	}, timeout).Should(Succeed())
	c.placed(g, stayers, after)

	// The shards let go.
	for id := range movers {
		c.acknowledge(g, configMaps, id.Name)
	}
	g.Eventually(func(g Gomega) { c.placed(g, keys, after) }, timeout).Should(Succeed())
}

func TestOneAssignerLeadsAtATimeAndAnotherTakesOverWhenItStops(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	first, stopFirst := c.assigner(time.Hour)
	second, stopSecond := c.assigner(time.Hour)
	leaders := func() int { return leading(first, second) }
	g.Eventually(leaders, timeout).Should(Equal(1))
	g.Consistently(leaders, time.Second, 50*time.Millisecond).Should(Equal(1))

	l, err := c.k8s.CoordinationV1().Leases(c.ns).Get(context.Background(), ring+"-assigner", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Labels).NotTo(HaveKey(shard.RingLabel), "the assigner's Lease is no shard's")

	stop, other := stopFirst, second
	if second.Leading() {
		stop, other = stopSecond, first
	}
	stop()
	g.Eventually(other.Leading, timeout).Should(BeTrue())
}

func TestTheAssignersLeaseNamesTheLeadersShardAndTwoReplicasOfOneShardDoNotBothLead(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	ofShardA := func(o *Options) { o.Shard = "shard-a" }
	first, _ := c.assigner(time.Hour, ofShardA)
	second, _ := c.assigner(time.Hour, ofShardA)
	leaders := func() int { return leading(first, second) }
	g.Eventually(leaders, timeout).Should(Equal(1))
	g.Consistently(leaders, time.Second, 50*time.Millisecond).Should(Equal(1), "one shard name, two processes, one leader")

	leader := first
	if second.Leading() {
		leader = second
	}
	l, err := c.k8s.CoordinationV1().Leases(c.ns).Get(context.Background(), ring+"-assigner", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Spec.HolderIdentity).To(HaveValue(And(HavePrefix("shard-a_"), Equal(leader.holder))))
}

// leading counts the assigners that lead now.
func leading(as ...*Assigner) int {
	n := 0
	for _, a := range as {
		if a.Leading() {
			n++
		}
	}
	return n
}

func TestTheAssignersWritesAreBoundedByItsTokenBucket(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	keys := c.family(5, nil) // ten objects to assign
	passes := make(chan Counts, 100)
	began := time.Now()
	c.assigner(time.Hour, func(o *Options) {
		o.RescuesPerSecond, o.RescueBurst = 5, 1
		o.OnPass = func(n Counts) { passes <- n }
	})
	var first Counts
	g.Eventually(passes, timeout).Should(Receive(&first))
	took := time.Since(began)
	g.Expect(first).To(Equal(Counts{Listed: 10, Assigned: 10}))
	// One token at once, then one every 200 ms: nine waits.
	g.Expect(took).To(BeNumerically(">=", 1700*time.Millisecond), "ten writes at 5 a second")
	c.placed(g, keys, shard.NewRing("a"))
}

// A pass that lists in pages sees every object of every page.
func TestAPassThatListsInPagesAssignsEveryObject(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.join("b")
	keys := c.family(7, nil) // fourteen objects: pages of 3, some of them partial
	passes := make(chan Counts, 100)
	c.assigner(time.Hour, func(o *Options) {
		o.PageSize = 3
		o.OnPass = func(n Counts) { passes <- n }
	})
	var first Counts
	g.Eventually(passes, timeout).Should(Receive(&first))
	g.Expect(first).To(Equal(Counts{Listed: 14, Assigned: 14}))
	c.placed(g, keys, shard.NewRing("a", "b"))
}

func TestAViewSeesShardsComeAndGo(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	v, err := NewView(c.k8s.CoordinationV1(), c.ns, ring)
	g.Expect(err).NotTo(HaveOccurred())
	c.run(v.Start, nil)
	leaveA := c.join("a")
	c.join("b")
	cm := &metav1.ObjectMeta{Namespace: c.ns, Name: "foo"}
	key, _ := shard.ObjectKey(configMaps.GroupKind, cm)
	shardOf := func() string {
		s, _ := ShardFor(v.Ring(time.Now()), kinds, configMaps.GroupKind, cm)
		return s
	}
	g.Eventually(func() []string { return v.Shards(time.Now()).Available() }, timeout).Should(Equal([]string{"a", "b"}))
	g.Expect(shardOf()).To(Equal(shard.NewRing("a", "b").ShardFor(key)))
	now := time.Now()
	g.Expect(v.Ring(now)).To(BeIdenticalTo(v.Ring(now)), "the ring is built again though no Lease changed")
	leaveA()
	g.Eventually(func() []string { return v.Shards(time.Now()).Available() }, timeout).Should(Equal([]string{"b"}))
	g.Expect(shardOf()).To(Equal("b"))
}

func TestAPassAssignsNewObjectsBeforeItDrainsOthers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	keys := c.family(10, nil)
	_, stop := c.assigner(time.Hour) // no resync: only the ring's change starts a pass
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a")) }, timeout).Should(Succeed())
	// New objects, listed after the old ones, made while no assigner runs
	// (one would assign them as they appear), wait for the next pass.
	stop()
	for i := range 5 {
		_, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("zz-%d", i)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}

	c.join("b")
	c.assigner(time.Hour)
	var assigned, drained []int64
	g.Eventually(func(g Gomega) {
		assigned, drained = nil, nil
		for id, meta := range c.labels(g) {
			if id.Namespace != "configmaps" {
				continue
			}
			// Resource versions grow with every write (etcd's revision):
			// they order the assigner's patches.
			rv, err := strconv.ParseInt(meta.ResourceVersion, 10, 64)
			g.Expect(err).NotTo(HaveOccurred())
			switch {
			case strings.HasPrefix(id.Name, "zz-"):
				g.Expect(meta.Labels).To(HaveKey(shard.ShardLabel(ring)), "%s", id)
				assigned = append(assigned, rv)
			case meta.Labels[shard.DrainLabel(ring)] != "":
				drained = append(drained, rv)
			}
		}
		g.Expect(drained).NotTo(BeEmpty(), "no object of a is asked to move to b yet")
	}, timeout).Should(Succeed())
	g.Expect(slices.Max(assigned)).To(BeNumerically("<", slices.Min(drained)),
		"every new object is assigned before the first drain")
}
