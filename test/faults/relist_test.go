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
	s := newGap(t, g, "relist", map[string][]string{"watch-cache": {"false"}, "etcd-compaction-interval": {compaction.String()}})
	px, err := faults.New(s.cp.Config, 42)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(px.Close()).To(Succeed()) })
	runOperator(t, throughProxy(px, 20, 30), s.ns, s.reg)
	s.before(g)
	lists := func() int { return countLists(px.Requests(), "/kopfexamples") }
	listsBefore := lists()

	// The gap: the operator cannot reach the API server while objects
	// change, and etcd compacts past everything it saw.
	px.Outage()
	s.change(g)
	for i := range 20 { // more revisions, so that compaction passes the operator's
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, GenerateName: "rev-"}}
		g.Expect(s.admin.Create(ctx, cm)).To(Succeed(), "write %d", i)
	}
	<-time.After(3 * compaction) // the gap lasts this long
	px.Restore()
	restored := time.Now()

	g.Eventually(func(g Gomega) []call { return s.calls.of("update", "changed") }, timeout).Should(HaveLen(1))
	relisted := time.Since(restored)
	g.Expect(lists()).To(BeNumerically(">", listsBefore), "the informer did not list again: the watch did not expire (requests: %v)", px.Requests())
	s.handledOnce(g) // nothing ran again because of the relist
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
