package assign

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gopf-dev/gopf/internal/shard"
)

// storageClasses is a cluster-scoped kind of the ring, which no other
// test of the package assigns.
var storageClasses = Kind{Resource: schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	GroupKind: schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}}

func TestObjectsCreatedWithoutAShardGetOneWithoutWaitingForAPass(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	c.join("b")
	passes := make(chan Counts, 100)
	c.assigner(time.Hour, func(o *Options) { // no resync: after the first pass, only a change of the ring starts one
		o.Kinds = append(kinds[:len(kinds):len(kinds)], storageClasses)
		o.OnPass = func(n Counts) { passes <- n }
	})
	g.Eventually(passes, timeout).Should(Receive())

	// Created after the first pass, which does not see them.
	keys := c.family(3, nil) // main objects and children, namespaced
	sc, err := c.k8s.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: c.ns}, Provisioner: "example.com/none"}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = c.k8s.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	r := shard.NewRing("a", "b")
	g.Eventually(func(g Gomega) {
		c.placed(g, keys, r)
		got, err := c.k8s.StorageV1().StorageClasses().Get(context.Background(), sc.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		key, _ := shard.ObjectKey(storageClasses.GroupKind, got)
		g.Expect(got.Labels).To(HaveKeyWithValue(shard.ShardLabel(ring), r.ShardFor(key)), "the cluster-scoped object")
	}, timeout).Should(Succeed())
}

func TestAnObjectWhoseShardLetItGoGetsItsNewShardWithoutWaitingForAPass(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	keys := c.family(1, nil)
	id := types.NamespacedName{Namespace: "configmaps", Name: "cm-0"}
	c.assigner(time.Hour, func(o *Options) { o.DrainCheckPeriod = time.Hour })
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a")) }, timeout).Should(Succeed())

	// The object is drained and its shard lets go, as a shard
	// acknowledges: both labels removed. Neither a resync nor a drain
	// check follows within the test.
	newcomer := ""
	for i := 0; newcomer == ""; i++ { // a shard that the object moves to
		if s := fmt.Sprintf("new-%d", i); shard.NewRing("a", s).ShardFor(keys[id]) == s {
			newcomer = s
		}
	}
	c.join(newcomer)
	g.Eventually(func(g Gomega) {
		g.Expect(c.labels(g)[id].Labels).To(HaveKey(shard.DrainLabel(ring)))
	}, timeout).Should(Succeed())
	c.acknowledge(g, configMaps, id.Name)
	g.Eventually(func(g Gomega) { c.placed(g, keys, shard.NewRing("a", newcomer)) }, timeout).Should(Succeed())
}

func TestAnAssignerThatLostItsLeaseAssignsNewObjectsNoMore(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	c.join("a")
	a, _ := c.assigner(time.Hour)
	g.Eventually(a.Leading, timeout).Should(BeTrue())

	// Another holder takes the assigner's Lease for an hour.
	g.Eventually(func(g Gomega) {
		l, err := c.k8s.CoordinationV1().Leases(c.ns).Get(context.Background(), ring+"-assigner", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("thief"), ptr.To(int32(3600))
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		_, err = c.k8s.CoordinationV1().Leases(c.ns).Update(context.Background(), l, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}, timeout).Should(Succeed())
	g.Eventually(a.Leading, timeout).Should(BeFalse())

	c.family(1, nil)
	g.Consistently(func(g Gomega) {
		g.Expect(c.labels(g)[types.NamespacedName{Namespace: "configmaps", Name: "cm-0"}].Labels).To(BeEmpty())
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "no watch of the old leader's assigns it")
}
