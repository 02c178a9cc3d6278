package assign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gopf-dev/gopf/internal/shard"
)

// lease writes the Lease of shard name in the test's ring as its holder
// left it: renewed at renewed, for duration.
func (c *cluster) lease(name, holder string, duration time.Duration, renewed time.Time) {
	c.t.Helper()
	at := metav1.NewMicroTime(renewed)
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
		AcquireTime: &at, RenewTime: &at}
	leases := c.k8s.CoordinationV1().Leases(c.ns)
	l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
	if err == nil {
		l.Spec = spec
		_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
	} else {
		_, err = leases.Create(context.Background(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{shard.RingLabel: ring}}, Spec: spec}, metav1.CreateOptions{})
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

// A shard that missed its renewal is probably dead: the objects of a dead
// shard that the ring gives it wait, unwritten, rather than move to it to
// wait there for its claim and move again; they move once it renews.
func TestTheObjectsOfADeadShardWaitRatherThanMoveOntoAShardThatMissedItsRenewal(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	// late renewed 70 s ago for 60 s: Expired for 50 s more.
	c.lease("late", "late", time.Minute, time.Now().Add(-70*time.Second))
	c.lease("ghost", "ghost", 2*time.Second, time.Now().Add(-time.Hour)) // Uncertain: claimed, then Dead
	keys := c.family(10, map[string]string{shard.ShardLabel(ring): "ghost"})
	before := c.labels(g)
	r := shard.NewRing("a", "late")
	toA, toLate := map[types.NamespacedName]string{}, map[types.NamespacedName]string{}
	for id, key := range keys {
		if r.ShardFor(key) == "a" {
			toA[id] = key
		} else {
			toLate[id] = key
		}
	}
	g.Expect(toA).NotTo(BeEmpty())
	g.Expect(toLate).NotTo(BeEmpty())
	deferred := make(chan int, 100)
	c.assigner(time.Hour, func(o *Options) {
		o.OnPass = func(n Counts) {
			select {
			case deferred <- n.Deferred:
			default:
			}
		}
	})

	g.Eventually(func(g Gomega) { c.placed(g, toA, r) }, timeout).Should(Succeed())
	g.Eventually(deferred, timeout).Should(Receive(BeNumerically(">", 0)))
	g.Consistently(func(g Gomega) {
		objs := c.labels(g)
		for id := range toLate {
			g.Expect(objs[id].ResourceVersion).To(Equal(before[id].ResourceVersion), "%s waits unwritten", id)
		}
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	c.lease("late", "late", time.Minute, time.Now())
	g.Eventually(func(g Gomega) { c.placed(g, keys, r) }, timeout).Should(Succeed())
}

// Drains move objects that a live shard handles meanwhile; rescues give a
// shard to objects that nobody handles. Each waits for a bucket of its
// own: the drains of a rebalance do not hold up the moves of a dead
// shard's objects.
func TestDrainsAndRescuesWaitForBucketsOfTheirOwn(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.join("b")
	c.lease("ghost", "ghost", 2*time.Second, time.Now().Add(-time.Hour))
	ofGhost := c.family(5, map[string]string{shard.ShardLabel(ring): "ghost"})
	r := shard.NewRing("a", "b")
	drains := 0
	for i := range 20 { // on a, some of them b's by the ring: drains
		cm, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("on-a-%d", i), Labels: map[string]string{shard.ShardLabel(ring): "a"}}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		if key, _ := shard.ObjectKey(configMaps.GroupKind, cm); r.ShardFor(key) == "b" {
			drains++
		}
	}
	g.Expect(drains).To(BeNumerically(">", 1))
	c.assigner(time.Hour, func(o *Options) {
		o.DrainsPerSecond, o.DrainBurst = 0.001, 1 // one drain, then none for 1,000 s
	})

	g.Eventually(func(g Gomega) { c.placed(g, ofGhost, r) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		n := 0
		for _, meta := range c.labels(g) {
			if meta.Labels[shard.DrainLabel(ring)] != "" {
				n++
			}
		}
		g.Expect(n).To(BeNumerically("<=", 1), "one drain token")
	}, time.Second, 100*time.Millisecond).Should(Succeed())
}

// A shard that turns Uncertain while a pass runs is claimed then, not
// after the pass, and the pass moves its objects: under a crash loop a
// pass may outlast its leader.
func TestAShardThatTurnsUncertainDuringAPassIsClaimedInIt(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	// fading renewed 3 s ago for 3 s: Expired now, Uncertain in 3 s.
	c.lease("fading", "fading", 3*time.Second, time.Now().Add(-3*time.Second))
	ofFading := c.family(3, map[string]string{shard.ShardLabel(ring): "fading"})
	for i := range 20 { // twenty objects without a shard, at two writes a second
		_, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("new-%d", i)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	passes := make(chan Counts, 100)
	c.assigner(time.Hour, func(o *Options) {
		o.RescuesPerSecond, o.RescueBurst = 2, 1
		o.OnPass = func(n Counts) { passes <- n }
	})

	var first Counts
	g.Eventually(passes, timeout).Should(Receive(&first))
	g.Expect(first.Renewed).To(BeNumerically(">=", 1), "%+v", first)
	g.Expect(first.Reassigned).To(Equal(len(ofFading)), "the pass moved every object of the shard it claimed: %+v", first)
	c.placed(g, ofFading, shard.NewRing("a"))
}

// A new leader's rescue of a dead shard's objects goes on where the last
// leader's got to (ResumeAnnotation), round to it, rather than from the
// top of the list, and tells the next leader where it got to.
func TestANewLeaderRescuesFromWhereTheLastOneGotTo(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.lease("ghost", "ghost", 2*time.Second, time.Now().Add(-time.Hour))
	keys := c.family(8, map[string]string{shard.ShardLabel(ring): "ghost"})
	at := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	_, err := c.k8s.CoordinationV1().Leases(c.ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: ring + "-assigner", Annotations: map[string]string{ResumeAnnotation: "configmaps " + c.ns + "/cm-3"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone_xxxxx"), LeaseDurationSeconds: ptr.To(int32(1)), AcquireTime: &at, RenewTime: &at},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	c.assigner(time.Hour, func(o *Options) { o.RescuesPerSecond, o.RescueBurst = 10, 1 })

	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a")) }, timeout).Should(Succeed())
	var first, later []int64 // up to the mark; after it
	for id, meta := range c.labels(g) {
		rv, err := strconv.ParseInt(meta.ResourceVersion, 10, 64)
		g.Expect(err).NotTo(HaveOccurred())
		if id.Namespace == "configmaps" && id.Name <= "cm-3" {
			first = append(first, rv)
		} else {
			later = append(later, rv)
		}
	}
	g.Expect(first).To(HaveLen(4))
	g.Expect(slices.Max(later)).To(BeNumerically("<", slices.Min(first)),
		"the objects after the mark (cm-4 to cm-7, then every Secret) moved before those up to it")
	l, err := c.k8s.CoordinationV1().Leases(c.ns).Get(context.Background(), ring+"-assigner", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Annotations).To(HaveKeyWithValue(ResumeAnnotation, "configmaps "+c.ns+"/cm-3"), "the rescue went round to where it began")
}

func TestAMarkIsWrittenAndReadBackAndOrdersObjectsAsTheyAreListed(t *testing.T) {
	a := &Assigner{opts: Options{Kinds: kinds}}
	m := markOf(1, &metav1.ObjectMeta{Namespace: "ns", Name: "child"})
	if got := a.format(m); got != "secrets ns/child" {
		t.Errorf("format: %q", got)
	}
	if got := a.parse(a.format(m)); got != m {
		t.Errorf("parse(format(m)) = %+v, want %+v", got, m)
	}
	for _, s := range []string{"", "deployments.apps ns/web", "no-space"} {
		if got := a.parse(s); got != start {
			t.Errorf("parse(%q) = %+v, want the start", s, got)
		}
	}
	ordered := []mark{start, {0, "a/z"}, {0, "b/a"}, {0, "b/b"}, {1, "a/a"}}
	for i := range ordered {
		for j := range ordered {
			if got := ordered[i].before(ordered[j]); got != (i < j) {
				t.Errorf("%+v before %+v: %v", ordered[i], ordered[j], got)
			}
		}
	}
}
