package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// compaction is how often the API server of the relist scenario compacts
// etcd: every revision older than the one before is gone.
const compaction = 2 * time.Second

// When the operator comes back from a gap long enough for etcd to compact
// away the last version it saw, its watch ends with 410 Gone and the
// informer lists the kind again. What changed in the gap reaches the right
// handlers once; what did not change runs nothing again.
//
// The scenario has a control plane of its own: the shared one serves watches
// from the API server's watch cache, which keeps a window of recent events
// and does not answer 410 for a gap of seconds. This one serves them from
// etcd (--watch-cache=false) and compacts etcd every two seconds.
func TestAWatchThatExpiresDuringAGapRelistsAndHandlesTheGapOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := envtest.Start(envtest.Options{
		CRDDirectoryPaths: []string{"../../config/crd/bases"},
		APIServerFlags:    map[string][]string{"watch-cache": {"false"}, "etcd-compaction-interval": {compaction.String()}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(cp.Stop()).To(Succeed()) })
	admin, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "relist"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	px, err := faults.New(cp.Config, 42)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(px.Close()).To(Succeed()) })
	var calls callLog
	reg := handlers.NewRegistry()
	fn := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"field": obj.Spec.Field}, nil
	}
	handlers.OnCreate(reg, fn, handlers.ID("create"))
	handlers.OnUpdate(reg, fn, handlers.ID("update"))
	handlers.OnDelete(reg, fn, handlers.ID("delete"))
	runOperator(t, throughProxy(px, 20, 30), ns, reg)

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	handledIn := func(name string) func(g Gomega) bool {
		return func(g Gomega) bool {
			var obj kopfv1.KopfExample
			g.Expect(admin.Get(ctx, key(name), &obj)).To(Succeed())
			return obj.Status.Extra["create"].Raw != nil
		}
	}
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Expect(admin.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Eventually(func(g Gomega) []call { return calls.of("create", name) }, timeout).Should(HaveLen(1))
		g.Eventually(handledIn(name), timeout).Should(BeTrue())
	}
	lists := func() int { return countLists(px.Requests(), "/kopfexamples") }
	listsBefore := lists()

	// The gap: the operator cannot reach the API server while objects
	// change, and etcd compacts past everything it saw.
	px.Outage()
	var changed kopfv1.KopfExample
	g.Expect(admin.Get(ctx, key("changed"), &changed)).To(Succeed())
	changed.Spec.Field = "changed in the gap"
	g.Expect(admin.Update(ctx, &changed)).To(Succeed())
	g.Expect(admin.Create(ctx, newExample(ns, "born"))).To(Succeed())
	g.Expect(admin.Delete(ctx, newExample(ns, "doomed"))).To(Succeed())
	for i := range 20 { // more revisions, so that compaction passes the operator's
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "rev-"}}
		g.Expect(admin.Create(ctx, cm)).To(Succeed(), "write %d", i)
	}
	<-time.After(3 * compaction) // the gap lasts this long
	px.Restore()
	restored := time.Now()

	g.Eventually(func(g Gomega) []call { return calls.of("update", "changed") }, timeout).Should(HaveLen(1))
	g.Eventually(func(g Gomega) []call { return calls.of("create", "born") }, timeout).Should(HaveLen(1))
	g.Expect(envtest.WaitGone(ctx, admin, newExample(ns, "doomed"))).To(Succeed())
	g.Expect(lists()).To(BeNumerically(">", listsBefore), "the informer did not list again: the watch did not expire (requests: %v)", px.Requests())
	g.Eventually(handledIn("born"), timeout).Should(BeTrue())

	relisted := time.Since(restored)
	// Nothing ran again because of the relist.
	g.Consistently(func() map[string]int {
		return map[string]int{
			"create steady": len(calls.of("create", "steady")), "update steady": len(calls.of("update", "steady")),
			"create changed": len(calls.of("create", "changed")), "update changed": len(calls.of("update", "changed")),
			"create born": len(calls.of("create", "born")), "delete doomed": len(calls.of("delete", "doomed")),
			"update doomed": len(calls.of("update", "doomed")),
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(map[string]int{
		"create steady": 1, "update steady": 0, "create changed": 1, "update changed": 1,
		"create born": 1, "delete doomed": 1, "update doomed": 0,
	}))
	record(t, "2e", outcome{Objects: 4, Outcome: "held", Figures: fmt.Sprintf(
		"the watch expired and the kind was listed again (%d lists); each change handled once, %s after the API server came back; nothing else ran again",
		lists()-listsBefore, seconds(relisted))})
}

// countLists counts the lists of the resource whose path ends with
// suffix: plain ones, and client-go's lists through a watch.
func countLists(reqs []faults.Request, suffix string) int {
	n := 0
	for _, r := range reqs {
		if r.Method == "GET" && strings.HasSuffix(r.Path, suffix) && (!r.Watch || r.InitialEvents) {
			n++
		}
	}
	return n
}
