package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	peers "github.com/gopf-dev/gopf/internal/peering"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// peeringStatus reads the entries of a peering object as written, with
// the fields gopf's API type does not name (the freeze message).
func peeringStatus(g Gomega, kind, ns, name string) map[string]any {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind(kind))
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
	status, _ := u.Object["status"].(map[string]any)
	return status
}

// createExample creates a KopfExample named name in ns and returns its key.
func createExample(t *testing.T, ns, name string) client.ObjectKey {
	t.Helper()
	obj := newExample(ns, name)
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(obj)
}

func freeze(id string, priority int, message string) peers.FreezeOptions {
	return peers.FreezeOptions{Identity: id, Priority: priority, Lifetime: time.Minute, Message: message}
}

func TestAnOptionalPeeringRunsStandaloneUntilItsObjectExistsThenTakesPart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	name := fmt.Sprintf("auto-%d", time.Now().UnixNano())
	runOperator(t, ns, tagging("auto"), func(o *envtest.OperatorOptions) {
		o.Reconcile.Peering = &gopfreconcile.PeeringOptions{Name: name, Optional: true, Lifetime: 4 * time.Second, Identity: "auto-op"}
	})
	alone := createExample(t, ns, "alone")
	g.Eventually(func(g Gomega) any { return statusField(g, alone, "tag", "by") }, timeout).Should(Equal("auto"), "no peering object: standalone")

	p := &kopfv1.ClusterKopfPeering{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	g.Eventually(func(g Gomega) map[string]any { return peeringStatus(g, "ClusterKopfPeering", "", name) }, timeout).Should(HaveKey("auto-op"), "it announces itself once the object exists")

	g.Expect(peers.Freeze(ctx, k8s, name, nil, freeze("higher", 10, ""))).To(Succeed())
	g.Eventually(func(g Gomega) float64 { return pausedGauge(g, name) }, timeout).Should(BeNumerically("==", 1))
	paused := createExample(t, ns, "paused")
	g.Consistently(func(g Gomega) any { return statusField(g, paused, "tag") }, settle).Should(BeNil(), "a higher peer is alive")
}

func TestAMandatoryPeeringPausesWhileItsObjectDoesNotExist(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	name := fmt.Sprintf("absent-%d", time.Now().UnixNano())
	runOperator(t, ns, tagging("mandatory"), peered(name, 0))
	g.Eventually(func(g Gomega) float64 { return pausedGauge(g, name) }, timeout).Should(BeNumerically("==", 1))
	key := createExample(t, ns, "waits")
	g.Consistently(func(g Gomega) any { return statusField(g, key, "tag") }, settle).Should(BeNil())

	p := &kopfv1.ClusterKopfPeering{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	g.Eventually(func(g Gomega) any { return statusField(g, key, "tag", "by") }, timeout).Should(Equal("mandatory"))
}

func TestANamespacedOperatorPeersInEachServedNamespaceAndObeysAFreezeInAnyOfThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	one, two := newNamespace(t), newNamespace(t)
	for _, ns := range []string{one, two} {
		g.Expect(k8s.Create(ctx, &kopfv1.KopfPeering{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peering"}})).To(Succeed())
	}
	name := "peering"
	runOperator(t, one, tagging("namespaced"), func(o *envtest.OperatorOptions) {
		o.Namespaces = []string{one, two}
		o.Reconcile.Peering = &gopfreconcile.PeeringOptions{Name: name, PerNamespace: true, Lifetime: 4 * time.Second, Identity: "ns-op"}
	})
	for _, ns := range []string{one, two} {
		g.Eventually(func(g Gomega) map[string]any { return peeringStatus(g, "KopfPeering", ns, name) }, timeout).Should(HaveKey("ns-op"), "its entry in %s", ns)
	}
	before := createExample(t, one, "before")
	g.Eventually(func(g Gomega) any { return statusField(g, before, "tag", "by") }, timeout).Should(Equal("namespaced"))

	// A freeze in the second namespace only pauses the whole operator.
	g.Expect(peers.Freeze(ctx, k8s, name, []string{two}, freeze("freeze@test", 100, "upgrading the database"))).To(Succeed())
	g.Eventually(func(g Gomega) any { return peeringStatus(g, "KopfPeering", two, name)["freeze@test"] }, timeout).
		Should(HaveKeyWithValue("message", "upgrading the database"))
	g.Expect(peeringStatus(g, "KopfPeering", one, name)).NotTo(HaveKey("freeze@test"))
	g.Eventually(func(g Gomega) any { return peeringStatus(g, "KopfPeering", two, name)["ns-op"] }, timeout).Should(HaveKeyWithValue("paused", true))
	during := createExample(t, one, "during")
	g.Consistently(func(g Gomega) any { return statusField(g, during, "tag") }, settle).Should(BeNil())

	g.Expect(peers.Unfreeze(ctx, k8s, name, []string{two}, "freeze@test")).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, during, "tag", "by") }, timeout).Should(Equal("namespaced"))
}

func TestAFreezeWithGlobsWritesToEveryMatchingNamespaceThatHasThePeering(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	one, two, other := newNamespace(t), newNamespace(t), newNamespace(t)
	name := fmt.Sprintf("glob-%d", time.Now().UnixNano())
	for _, ns := range []string{one, two} {
		g.Expect(k8s.Create(ctx, &kopfv1.KopfPeering{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	}
	pattern := "*," + "!" + other // every namespace with the object, the third has none anyway
	g.Expect(peers.Freeze(ctx, k8s, name, []string{pattern}, freeze("f", 100, ""))).To(Succeed())
	for _, ns := range []string{one, two} {
		g.Expect(peeringStatus(g, "KopfPeering", ns, name)).To(HaveKey("f"))
	}
	g.Expect(peers.Freeze(ctx, k8s, name, []string{other}, freeze("f", 100, ""))).NotTo(Succeed(), "a namespace named plainly must have the object")
	g.Expect(peers.Freeze(ctx, k8s, name+"-none", []string{"*"}, freeze("f", 100, ""))).To(MatchError(ContainSubstring("no namespace matching")))
	g.Expect(peers.Unfreeze(ctx, k8s, name, []string{pattern}, "f")).To(Succeed())
	for _, ns := range []string{one, two} {
		g.Expect(peeringStatus(g, "KopfPeering", ns, name)).NotTo(HaveKey("f"))
	}
}

func TestAStealthOperatorWritesNothingAndPausesForEveryLivePeer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	name := newPeeringObject(t)
	g.Expect(peers.Freeze(ctx, k8s, name, nil, freeze("higher", 10, "maintenance"))).To(Succeed())
	runOperator(t, ns, tagging("stealth"), func(o *envtest.OperatorOptions) {
		o.Reconcile.Peering = &gopfreconcile.PeeringOptions{Name: name, Stealth: true, Lifetime: 4 * time.Second, Identity: "stealth-op"}
	})
	g.Eventually(func(g Gomega) float64 { return pausedGauge(g, name) }, timeout).Should(BeNumerically("==", 1))
	first := createExample(t, ns, "first")
	g.Consistently(func(g Gomega) any { return statusField(g, first, "tag") }, settle).Should(BeNil(), "a higher peer is alive")

	g.Expect(peers.Unfreeze(ctx, k8s, name, nil, "higher")).To(Succeed())
	g.Eventually(func(g Gomega) any { return statusField(g, first, "tag", "by") }, timeout).Should(Equal("stealth"))
	g.Expect(peeringStatus(g, "ClusterKopfPeering", "", name)).NotTo(HaveKey("stealth-op"), "it never announced itself")

	// A lower peer does not know the stealth operator is there, so the
	// stealth one pauses for it too.
	g.Expect(peers.Freeze(ctx, k8s, name, nil, freeze("lower", -10, ""))).To(Succeed())
	g.Eventually(func(g Gomega) float64 { return pausedGauge(g, name) }, timeout).Should(BeNumerically("==", 1))
	second := createExample(t, ns, "second")
	g.Consistently(func(g Gomega) any { return statusField(g, second, "tag") }, settle).Should(BeNil())
	g.Expect(peeringStatus(g, "ClusterKopfPeering", "", name)).NotTo(HaveKey("stealth-op"))
}

func TestPeeringOptionsThatContradictEachOtherAreRefused(t *testing.T) {
	for name, p := range map[string]gopfreconcile.PeeringOptions{
		"stealth with a priority":         {Name: "x", Stealth: true, Priority: 5},
		"one namespace and per namespace": {Name: "x", Namespace: "a", PerNamespace: true},
	} {
		t.Run(name, func(t *testing.T) {
			mgr, err := newManager()
			if err != nil {
				t.Fatal(err)
			}
			if err := gopfreconcile.Setup(mgr, tagging("x"), gopfreconcile.Options{Peering: &p}); err == nil {
				t.Error("Setup accepted the options")
			}
		})
	}
}
