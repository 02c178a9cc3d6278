package shard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

const timeout = 30 * time.Second

// options are a member's options with durations short enough for a test:
// a Lease of 2 s, given up for lost after 1 s without renewal.
func options(ns, ring, shard string) MemberOptions {
	return MemberOptions{
		Ring: ring, Shard: shard, Namespace: ns,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
	}
}

// running is a started Member.
type running struct {
	*Member
	cancel context.CancelFunc
	done   chan struct{} // closed when Start returned
	err    error         // what Start returned, once done
}

func start(t *testing.T, leases coordinationv1client.LeasesGetter, opts MemberOptions) *running {
	t.Helper()
	opts.Log = testr.New(t)
	m, err := NewMember(leases, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Member: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = m.Start(ctx)
	}()
	t.Cleanup(func() { r.cancel(); <-r.done })
	return r
}

// stop stops r gracefully and returns Start's result.
func (r *running) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// ring is the ring the members of the tests join.
const ring = "members"

// states returns the state of each shard of ring, by name, and the
// available shards, as an assigner sees them now.
func states(g Gomega, leases coordinationv1client.LeasesGetter, ns string) (map[string]State, []string) {
	sel, err := RingSelector(ring)
	g.Expect(err).NotTo(HaveOccurred())
	list, err := leases.Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
	g.Expect(err).NotTo(HaveOccurred())
	shards := ShardsOf(list.Items, time.Now())
	byName := map[string]State{}
	for _, s := range shards {
		byName[s.Name] = s.State
	}
	return byName, shards.Available()
}

func TestMembersJoinTheRingLeaveItGracefullyAndExpireWhenTheyStopRenewing(t *testing.T) {
	g := NewWithT(t)
	k8s := kubernetes.NewForConfigOrDie(apiServer(t))
	leases := k8s.CoordinationV1()
	namespace, err := k8s.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shard-"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace.Name

	// Two members join: each holds a Lease named after it, labelled with
	// the ring.
	a, b := start(t, leases, options(ns, ring, "a")), start(t, leases, options(ns, ring, "b"))
	g.Eventually(a.Joined(), timeout).Should(BeClosed())
	g.Eventually(b.Joined(), timeout).Should(BeClosed())
	for _, name := range []string{"a", "b"} {
		l, err := leases.Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(l.Labels).To(HaveKeyWithValue(RingLabel, ring))
		g.Expect(l.Spec.HolderIdentity).To(HaveValue(Equal(name)))
		g.Expect(l.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(2)))
	}
	g.Eventually(func(g Gomega) {
		byName, available := states(g, leases, ns)
		g.Expect(byName).To(Equal(map[string]State{"a": Ready, "b": Ready}))
		g.Expect(available).To(Equal([]string{"a", "b"}))
	}, timeout).Should(Succeed())

	// One leaves gracefully: it releases its Lease, and is dead at once.
	g.Expect(a.stop()).To(Succeed())
	byName, available := states(g, leases, ns)
	g.Expect(byName).To(Equal(map[string]State{"a": Dead, "b": Ready}))
	g.Expect(available).To(Equal([]string{"b"}))

	// A third joins, then cannot write its Lease any more: it gives the
	// Lease up for lost, and the others see it expired, then uncertain.
	cut := &partition{LeasesGetter: leases}
	c := start(t, cut, options(ns, ring, "c"))
	g.Eventually(c.Joined(), timeout).Should(BeClosed())
	cut.broken.Store(true)
	g.Eventually(c.done, timeout).Should(BeClosed())
	g.Expect(c.err).To(MatchError(ErrLeaseLost))
	g.Eventually(func(g Gomega) State { byName, _ := states(g, leases, ns); return byName["c"] }, timeout).Should(Equal(Expired))
	g.Eventually(func(g Gomega) State { byName, _ := states(g, leases, ns); return byName["c"] }, timeout).Should(Equal(Uncertain))
	_, available = states(g, leases, ns)
	g.Expect(available).To(Equal([]string{"b", "c"}), "an uncertain shard keeps its objects until it is known dead")

	// An assigner claims the uncertain Lease: the shard is dead.
	l, err := leases.Leases(ns).Get(context.Background(), "c", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	Claim(l, time.Now())
	_, err = leases.Leases(ns).Update(context.Background(), l, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	byName, available = states(g, leases, ns)
	g.Expect(byName).To(Equal(map[string]State{"a": Dead, "b": Ready, "c": Dead}))
	g.Expect(available).To(Equal([]string{"b"}))

	g.Expect(b.stop()).To(Succeed())
}

// partition passes Lease requests through until broken; then every update
// fails, as if the API server were out of reach.
type partition struct {
	coordinationv1client.LeasesGetter
	broken atomic.Bool
}

func (p *partition) Leases(namespace string) coordinationv1client.LeaseInterface {
	return &cutLeases{LeaseInterface: p.LeasesGetter.Leases(namespace), broken: &p.broken}
}

type cutLeases struct {
	coordinationv1client.LeaseInterface
	broken *atomic.Bool
}

func (c *cutLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if c.broken.Load() {
		return nil, errors.New("partitioned")
	}
	return c.LeaseInterface.Update(ctx, l, opts)
}

func TestAMemberStartsOnce(t *testing.T) {
	m, err := NewMember(nil, options("default", "ring", "s1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatalf("first Start, stopped before it joined: %v", err)
	}
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "starts once") {
		t.Errorf("second Start: %v, want an error saying a member starts once", err)
	}
	if m.NeedLeaderElection() {
		t.Error("a member needs leader election")
	}
}

func TestBadMemberOptionsAreRejected(t *testing.T) {
	for why, change := range map[string]func(*MemberOptions){
		"ring's name is empty":       func(o *MemberOptions) { o.Ring = "" },
		"shard name":                 func(o *MemberOptions) { o.Shard = "Shard_1" },
		"namespace is empty":         func(o *MemberOptions) { o.Namespace = "" },
		"whole number of seconds":    func(o *MemberOptions) { o.LeaseDuration = 1500 * time.Millisecond },
		"greater than renewDeadline": func(o *MemberOptions) { o.RenewDeadline = 2 * time.Second },
	} {
		opts := options("default", "ring", "s1")
		change(&opts)
		if _, err := NewMember(nil, opts); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("NewMember with a bad %s: %v", why, err)
		}
	}
	opts := MemberOptions{Ring: "ring", Namespace: "default"}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	if opts.Shard == "" || opts.LeaseDuration != DefaultLeaseDuration || opts.RenewDeadline != DefaultRenewDeadline ||
		opts.RetryPeriod != DefaultRetryPeriod {
		t.Errorf("zero options default to %+v", opts)
	}
}
