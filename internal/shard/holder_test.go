package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
)

// leaseNamespace makes a namespace for one test's Leases.
func leaseNamespace(t *testing.T) (coordinationv1client.LeasesGetter, string) {
	t.Helper()
	k8s := kubernetes.NewForConfigOrDie(apiServer(t))
	ns, err := k8s.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "holder-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return k8s.CoordinationV1(), ns.Name
}

// holder returns the holder identity of a shard's Lease.
func holder(g Gomega, leases coordinationv1client.LeasesGetter, ns, name string) string {
	l, err := leases.Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func TestTwoProcessesWithOneShardNameNeverHoldTheShardAtOnce(t *testing.T) {
	g := NewWithT(t)
	leases, ns := leaseNamespace(t)

	first := start(t, leases, options(ns, ring, "same"))
	g.Eventually(first.Joined(), timeout).Should(BeClosed())
	g.Expect(first.Ready(nil)).To(Succeed())

	// The second process takes the shard's name for its own, but the
	// Lease names the first process: it waits, through several of the
	// first one's renewals and beyond the Lease's duration, and says it is
	// not ready.
	second := start(t, leases, options(ns, ring, "same"))
	g.Consistently(second.Joined(), 3*time.Second).ShouldNot(BeClosed())
	g.Expect(second.Ready(nil)).To(MatchError(ContainSubstring("does not hold its Lease")))
	g.Expect(first.done).NotTo(BeClosed(), "the first process lost its Lease to the second")

	// Once the first leaves gracefully, the second holds the shard.
	g.Expect(first.stop()).To(Succeed())
	g.Eventually(second.Joined(), timeout).Should(BeClosed())
	g.Expect(holder(g, leases, ns, "same")).To(Equal("same"), "the Lease's holder identity is the shard's name, as the reference sharder expects")
	g.Expect(second.stop()).To(Succeed())
}

func TestAGracefulStopDrainsTheShardsWorkBeforeItReleasesTheLease(t *testing.T) {
	g := NewWithT(t)
	leases, ns := leaseNamespace(t)

	var heldWhileDraining atomic.Value
	opts := options(ns, ring, "drained")
	var joins atomic.Int32
	opts.OnJoin = func() { joins.Add(1) }
	opts.Drain = func(timeout time.Duration) bool {
		l, err := leases.Leases(ns).Get(context.Background(), "drained", metav1.GetOptions{})
		if err != nil {
			heldWhileDraining.Store(err.Error())
			return true
		}
		heldWhileDraining.Store(ptr.Deref(l.Spec.HolderIdentity, ""))
		return true
	}
	m := start(t, leases, opts)
	g.Eventually(m.Joined(), timeout).Should(BeClosed())
	g.Expect(joins.Load()).To(BeEquivalentTo(1))
	g.Expect(m.stop()).To(Succeed())
	g.Expect(heldWhileDraining.Load()).To(Equal("drained"), "the Lease was released before the drain")
	g.Expect(holder(g, leases, ns, "drained")).To(BeEmpty(), "a drained shard releases its Lease")
}

func TestAShardWhoseWorkDoesNotFinishLeavesItsLeaseToExpire(t *testing.T) {
	g := NewWithT(t)
	leases, ns := leaseNamespace(t)

	opts := options(ns, ring, "stuck")
	var timeoutGiven atomic.Int64
	opts.DrainTimeout = 5 * time.Second
	opts.Drain = func(timeout time.Duration) bool {
		timeoutGiven.Store(int64(timeout))
		return false // a handler still runs
	}
	m := start(t, leases, opts)
	g.Eventually(m.Joined(), timeout).Should(BeClosed())
	g.Expect(m.stop()).To(Succeed())
	g.Expect(time.Duration(timeoutGiven.Load())).To(Equal(5 * time.Second))
	g.Expect(holder(g, leases, ns, "stuck")).To(Equal("stuck"), "the Lease was released while work still ran")

	// A replacement under the same name (a restarted Pod of a StatefulSet)
	// waits for the Lease to expire, since it cannot know that the old
	// process is gone, then holds the shard.
	replacement := start(t, leases, options(ns, ring, "stuck"))
	g.Eventually(replacement.Joined(), timeout).Should(BeClosed())
	g.Expect(replacement.stop()).To(Succeed())
}

func TestAMemberThatNeverJoinedDrainsNothing(t *testing.T) {
	opts := options("default", ring, "never")
	opts.Drain = func(time.Duration) bool {
		t.Error("a member that never held its Lease drained work")
		return true
	}
	m, err := NewMember(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
}
