package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// writeKopfPeer writes a peering entry as Kopf 1.44.6 writes it (a merge
// patch of status.<identity>; lastseen is Python's isoformat() of the
// time), or removes it with a nil lastseen, as Kopf does when it stops.
func writeKopfPeer(g Gomega, peering, identity string, priority, lifetime int, lastseen *string) {
	body := fmt.Sprintf(`{"status":{%q:null}}`, identity)
	if lastseen != nil {
		body = fmt.Sprintf(`{"status":{%q:{"priority":%d,"lifetime":%d,"lastseen":%q}}}`, identity, priority, lifetime, *lastseen)
	}
	p := &kopfv1.ClusterKopfPeering{}
	p.Name = peering
	g.Expect(k8s.Patch(context.Background(), p, client.RawPatch("application/merge-patch+json", []byte(body)))).To(Succeed())
}

func TestAGopfOperatorObeysAKopfOperatorInTheSamePeering(t *testing.T) {
	for _, c := range []struct {
		name   string
		format func(time.Time) string
	}{
		{"Kopf 1.44", func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }},
		{"older Kopf (naive UTC times)", func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			peering := newPeeringObject(t)
			const kopf = "kopf@host/20261123030819/abc"
			now := c.format(time.Now())
			writeKopfPeer(g, peering, kopf, 100, 60, &now)
			runOperator(t, ns, tagging("gopf"), peered(peering, 0))

			obj := newExample(ns, "during-kopf")
			g.Expect(k8s.Create(ctx, obj)).To(Succeed())
			key := client.ObjectKeyFromObject(obj)
			g.Eventually(func(g Gomega) float64 { return pausedGauge(g, peering) }, timeout).Should(BeNumerically("==", 1))
			g.Consistently(func(g Gomega) any { return statusField(g, key, "tag", "by") }, settle).Should(BeNil(), "the Kopf operator has the higher priority")

			writeKopfPeer(g, peering, kopf, 0, 0, nil) // Kopf stops
			g.Eventually(func(g Gomega) any { return statusField(g, key, "tag", "by") }, timeout).Should(Equal("gopf"))

			// A Kopf operator that died without leaving: its entry expires
			// and no longer pauses anyone; gopf removes it, as Kopf would.
			long := c.format(time.Now().Add(-2 * time.Minute))
			writeKopfPeer(g, peering, "kopf@crashed", 100, 60, &long)
			g.Eventually(func(g Gomega) map[string]kopfv1.PeerStatus {
				var p kopfv1.ClusterKopfPeering
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: peering}, &p)).To(Succeed())
				return p.Status
			}, timeout).ShouldNot(HaveKey("kopf@crashed"))
			later := newExample(ns, "after-kopf")
			g.Expect(k8s.Create(ctx, later)).To(Succeed())
			g.Eventually(func(g Gomega) any { return statusField(g, client.ObjectKeyFromObject(later), "tag", "by") }, timeout).Should(Equal("gopf"))
		})
	}
}
