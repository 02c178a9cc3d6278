package assign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/shard"
)

func TestResyncsOfASettledRingAreNarrowAndEveryTenthIsWhole(t *testing.T) {
	g := NewWithT(t)
	var c cadence
	now := time.Unix(0, 0)
	ab := []string{"a", "b"}
	pass := func(want bool, counts Counts) {
		t.Helper()
		due, narrow := c.next(now, ab)
		g.Expect(due).To(BeTrue(), "at %s", now)
		g.Expect(narrow).To(Equal(want), "at %s", now)
		c.done(now, ab, narrow, counts, nil, 30*time.Second, 5*time.Second)
	}
	pass(false, Counts{}) // the first pass looks at everything
	due, _ := c.next(now.Add(29*time.Second), ab)
	g.Expect(due).To(BeFalse(), "no pass before the resync")
	for range narrowResyncs {
		now = now.Add(30 * time.Second)
		pass(true, Counts{Assigned: 1}) // assigning what the watch missed leaves the ring settled
	}
	now = now.Add(30 * time.Second)
	pass(false, Counts{})

	// A pass that left objects draining is followed by a whole one soon.
	now = now.Add(30 * time.Second)
	pass(true, Counts{Draining: 1})
	g.Expect(c.due).To(Equal(now.Add(5 * time.Second)))
	now = now.Add(5 * time.Second)
	pass(false, Counts{})

	// A change of the ring is a whole pass at once; so is a ring with no
	// shard available, which no selector can name.
	due, narrow := c.next(now, []string{"a"})
	g.Expect(due).To(BeTrue())
	g.Expect(narrow).To(BeFalse())
	c.done(now, nil, false, Counts{}, nil, 30*time.Second, 5*time.Second)
	_, narrow = c.next(now.Add(time.Minute), nil)
	g.Expect(narrow).To(BeFalse())
}

func TestANarrowPassListsOnlyTheObjectsWithoutAnAvailableShard(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.family(5, nil) // ten objects
	passes := make(chan Counts, 100)
	c.assigner(500*time.Millisecond, func(o *Options) { o.OnPass = func(n Counts) { passes <- n } })
	var first Counts
	g.Eventually(passes, timeout).Should(Receive(&first))
	g.Expect(first).To(Equal(Counts{Listed: 10, Assigned: 10}))

	// An object of a shard that never joined: no watch of unassigned
	// objects selects it, a narrow pass does.
	_, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "orphan", Labels: map[string]string{shard.ShardLabel(ring): "gone"}}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		var next Counts
		g.Expect(passes).To(Receive(&next))
		g.Expect(next).To(Equal(Counts{Narrow: true, Listed: 1, Reassigned: 1}))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var next Counts
		g.Expect(passes).To(Receive(&next))
		g.Expect(next).To(Equal(Counts{Narrow: true}), "the ring is settled: nothing is listed")
	}, timeout).Should(Succeed())
}

// A pass whose ring changes goes on with the new ring instead of starting
// over: with a ring that changes faster than a pass gets through the list,
// starting over kept every pass on the first objects.
func TestAPassWhoseRingChangesGoesOnWithTheNewRing(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.family(10, nil) // twenty objects, at four writes a second
	passes := make(chan Counts, 1)
	c.assigner(time.Hour, func(o *Options) {
		o.RescuesPerSecond, o.RescueBurst = 4, 1
		o.OnPass = func(n Counts) {
			select { // the first pass only: drains that no shard acknowledges are checked again and again
			case passes <- n:
			default:
			}
		}
	})
	g.Eventually(func(g Gomega) {
		n := 0
		for _, meta := range c.labels(g) {
			if meta.Labels[shard.ShardLabel(ring)] != "" {
				n++
			}
		}
		g.Expect(n).To(BeNumerically(">", 0))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	c.join("b")
	var first Counts
	g.Eventually(passes, timeout).Should(Receive(&first))
	g.Expect(first.Renewed).To(BeNumerically(">=", 1), "%+v", first)
	g.Expect(first.Listed).To(Equal(20), "%+v", first)
	g.Expect(first.Assigned).To(Equal(20), "every object got a shard in the pass the ring changed in: %+v", first)
	for id, meta := range c.labels(g) {
		g.Expect(meta.Labels[shard.ShardLabel(ring)]).To(BeElementOf("a", "b"), "%s", id)
	}
}

// A pass over every object assigns the objects without a shard before it
// moves those of a shard that left, though they come later in its list.
func TestAPassAssignsObjectsWithoutAShardBeforeItMovesThoseOfAShardThatLeft(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	leaveB := c.join("b")
	c.family(10, nil)
	_, stop := c.assigner(time.Hour)
	g.Eventually(func(g Gomega) {
		for id, meta := range c.labels(g) {
			g.Expect(meta.Labels).To(HaveKey(shard.ShardLabel(ring)), "%s", id)
		}
	}, timeout).Should(Succeed())
	stop()
	ofB := map[string]bool{}
	for id, meta := range c.labels(g) {
		if meta.Labels[shard.ShardLabel(ring)] == "b" {
			ofB[id.String()] = true
		}
	}
	g.Expect(ofB).NotTo(BeEmpty())
	leaveB()
	for i := range 5 { // after every ConfigMap of the family in the list
		_, err := c.k8s.CoreV1().ConfigMaps(c.ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("zz-%d", i)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}

	c.assigner(time.Hour, func(o *Options) { o.RescuesPerSecond, o.RescueBurst = 20, 1 })
	var assigned, moved []int64
	g.Eventually(func(g Gomega) {
		assigned, moved = nil, nil
		for id, meta := range c.labels(g) {
			g.Expect(meta.Labels).To(HaveKeyWithValue(shard.ShardLabel(ring), "a"), "%s", id)
			rv, err := strconv.ParseInt(meta.ResourceVersion, 10, 64)
			g.Expect(err).NotTo(HaveOccurred())
			switch {
			case strings.HasPrefix(id.Name, "zz-"):
				assigned = append(assigned, rv)
			case ofB[id.String()]:
				moved = append(moved, rv)
			}
		}
	}, timeout).Should(Succeed())
	g.Expect(slices.Max(assigned)).To(BeNumerically("<", slices.Min(moved)),
		"every object without a shard is assigned before the first object of b moves")
}
