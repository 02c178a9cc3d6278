package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	peers "github.com/gopf-dev/gopf/internal/peering"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// tagging returns a registry whose create handler records which operator
// handled an object.
func tagging(name string) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"by": name}, nil
	}, handlers.ID("tag"))
	return reg
}

func newPeeringObject(t *testing.T) string {
	t.Helper()
	p := &kopfv1.ClusterKopfPeering{ObjectMeta: metav1.ObjectMeta{GenerateName: "peering-"}}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatalf("creating the peering object: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	return p.Name
}

func peered(name string, priority int) func(*envtest.OperatorOptions) {
	return func(o *envtest.OperatorOptions) {
		o.Reconcile.Peering = &gopfreconcile.PeeringOptions{Name: name, Priority: priority, Lifetime: 4 * time.Second, Identity: fmt.Sprintf("op-%d", priority)}
	}
}

func TestOnlyTheHighestPriorityPeerWorksAndALowerOneTakesOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	high := runOperator(t, ns, tagging("high"), peered(peering, 100))
	runOperator(t, ns, tagging("low"), peered(peering, 0))

	first := newExample(ns, "first")
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(first), "tag", "by") }, timeout).Should(Equal("high"))

	g.Expect(high.Stop()).To(Succeed()) // leaves the peering object
	second := newExample(ns, "second")
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(second), "tag", "by") }, timeout).Should(Equal("low"))
}

func TestADevRunPausesTheDeployedOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	runOperator(t, ns, tagging("deployed"), peered(peering, 0))
	warm := newExample(ns, "warm")
	g.Expect(k8s.Create(ctx, warm)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(warm), "tag", "by") }, timeout).Should(Equal("deployed"))

	runOperator(t, ns, tagging("laptop"), peered(peering, gopfreconcile.DevPriority))
	var p kopfv1.ClusterKopfPeering
	g.Eventually(func(g Gomega) map[string]kopfv1.PeerStatus {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: peering}, &p)).To(Succeed())
		return p.Status
	}, timeout).Should(HaveKey(fmt.Sprintf("op-%d", gopfreconcile.DevPriority)))
	g.Eventually(func(g Gomega) float64 { return pausedGauge(g, peering) }, timeout).Should(BeNumerically("==", 1))

	obj := newExample(ns, "during-dev")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag", "by") }, timeout).Should(Equal("laptop"))
	g.Consistently(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag", "by") }, time.Second).Should(Equal("laptop"))
}

func TestEqualPrioritiesPauseEveryone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	one := peered(peering, 5)
	two := func(o *envtest.OperatorOptions) {
		one(o)
		o.Reconcile.Peering.Identity = "op-5-twin"
	}
	runOperator(t, ns, tagging("one"), one)
	runOperator(t, ns, tagging("two"), two)
	var p kopfv1.ClusterKopfPeering
	g.Eventually(func(g Gomega) int {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: peering}, &p)).To(Succeed())
		return len(p.Status)
	}, timeout).Should(Equal(2))

	obj := newExample(ns, "nobody")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Consistently(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag") }, 2*time.Second).Should(BeNil())
}

func TestNamespacePatternsFollowNamespacesCreatedLater(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("scope-%d", time.Now().UnixNano()%1000000)
	reg := tagging("scoped")
	op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{
		Scheme:    scheme,
		Reconcile: gopfreconcile.Options{Namespaces: []string{prefix + "-*,!" + prefix + "-pr-*"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

	for _, name := range []string{prefix + "-live", prefix + "-pr-1"} {
		g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		g.Expect(k8s.Create(ctx, newExample(name, "obj"))).To(Succeed())
	}
	g.Eventually(func(g Gomega) any {
		return statusField(g, client.ObjectKey{Namespace: prefix + "-live", Name: "obj"}, "tag", "by")
	}, timeout).Should(Equal("scoped"))
	g.Consistently(func(g Gomega) any {
		return statusField(g, client.ObjectKey{Namespace: prefix + "-pr-1", Name: "obj"}, "tag")
	}, time.Second).Should(BeNil())
}

func TestAFailingStartupHandlerStopsTheOperator(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cleanedUp bool
	reg := tagging("never")
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		return handlers.Permanent(errors.New("no database"))
	}, handlers.ID("connect"))
	handlers.OnCleanup(reg, func(ctx context.Context, c *handlers.Cause) error {
		cleanedUp = true
		return nil
	})
	op, err := envtest.RunOperator(context.Background(), cfg, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(op.Done(), timeout).Should(BeClosed())
	g.Expect(op.Err()).To(MatchError(ContainSubstring(`startup handler "connect"`)))
	g.Expect(op.Err()).To(MatchError(ContainSubstring("no database")))
	g.Expect(cleanedUp).To(BeFalse(), "cleanup runs only after a started operator stops")
}

func TestStartupRunsFirstCleanupLastAndMetricsCountHandlerCalls(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var order []string
	reg := handlers.NewRegistry()
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		order = append(order, "startup")
		if c.Retry == 0 {
			return handlers.Temporary(errors.New("not yet"), 100*time.Millisecond)
		}
		return nil
	})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		order = append(order, "create")
		return nil, nil
	}, handlers.ID("counted"))
	handlers.OnCleanup(reg, func(ctx context.Context, c *handlers.Cause) error {
		order = append(order, "cleanup")
		return nil
	})
	op := runOperator(t, ns, reg)
	before := counter(g, "gopf_handler_calls_total", "counted")
	obj := newExample(ns, "metered")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "gopf", "lastHandled") }, timeout).ShouldNot(BeNil())
	g.Expect(counter(g, "gopf_handler_calls_total", "counted")).To(Equal(before + 1))

	stopped := make(chan error)
	go func() { stopped <- op.Stop() }()
	g.Eventually(stopped, 35*time.Second).Should(Receive(BeNil()), "a clean stop within the graceful shutdown timeout")
	g.Expect(strings.Join(order, ",")).To(Equal("startup,startup,create,cleanup"))
}

// pausedGauge reads gopf_peering_paused of a peering.
func pausedGauge(g Gomega, peering string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "gopf_peering_paused" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == peering {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// counter sums a counter over the series that carry a label value.
func counter(g Gomega, name, label string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func TestAJoiningHigherPriorityWaitsForThePausedOperatorsDaemons(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	var started, returned atomic.Bool
	low := handlers.NewRegistry()
	handlers.OnDaemon(low, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		started.Store(true)
		<-d.Stopping()
		time.Sleep(time.Second) // cleaning up after the stop signal: still busy
		returned.Store(true)
		return nil
	}, handlers.ID("lingering"), handlers.CancellationTimeout(time.Minute))
	runOperator(t, ns, low, peered(peering, 0))
	g.Expect(k8s.Create(ctx, newExample(ns, "watched"))).To(Succeed())
	g.Eventually(started.Load, timeout).Should(BeTrue())

	runOperator(t, ns, tagging("high"), peered(peering, 100))
	entry := func(g Gomega, id string) kopfv1.PeerStatus {
		var p kopfv1.ClusterKopfPeering
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: peering}, &p)).To(Succeed())
		return p.Status[id]
	}
	g.Eventually(func(g Gomega) bool { return entry(g, "op-0").Busy }, timeout).Should(BeTrue(), "busy while its daemon runs")
	g.Expect(entry(g, "op-100").Paused).To(BeTrue(), "the joining operator waits")
	g.Eventually(func(g Gomega) bool { e := entry(g, "op-100"); return e.LastSeen != "" && !e.Paused }, timeout).Should(BeTrue())
	g.Expect(returned.Load()).To(BeTrue(), "the joining operator worked only after the daemon returned")
	g.Expect(entry(g, "op-0")).To(And(HaveField("Paused", true), HaveField("Busy", false)))

	obj := newExample(ns, "after")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag", "by") }, timeout).Should(Equal("high"))
}

func TestAJoiningOperatorWaitsForAPeerThatNeverConfirmsOnlyUpToItsLimit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	peering := newPeeringObject(t)
	// A lower peer that writes only Kopf's fields, as a Kopf operator does.
	kopf := peers.FreezeOptions{Identity: "kopf-operator", Lifetime: 2 * time.Minute}
	g.Expect(peers.Freeze(ctx, k8s, peering, nil, kopf)).To(Succeed())

	began := time.Now()
	runOperator(t, ns, tagging("gopf"), peered(peering, 100))
	obj := newExample(ns, "waited")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(obj), "tag", "by") }, 2*timeout).Should(Equal("gopf"))
	g.Expect(time.Since(began)).To(BeNumerically(">=", 30*time.Second), "it waited for the peer to confirm")
}
