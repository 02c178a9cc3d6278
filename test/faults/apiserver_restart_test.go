package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gopf-dev/gopf/test/faults"
)

// When the API server restarts and etcd keeps everything, the operator's
// connections break, its watches end, and the new API server builds its
// watch cache afresh from etcd. The operator reconnects by itself; what
// changes after the restart reaches the right handlers once, and nothing
// handled before runs again.
//
// The scenario has a control plane of its own, whose kube-apiserver it
// stops (SIGTERM) and starts again with the same flags; the operator talks
// to the API server directly, as in a cluster.
func TestAnAPIServerRestartWithEtcdKeptRunsNothingAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newGap(t, g, "restarted", nil)
	runOperator(t, s.cp.Config, s.ns, s.reg)
	s.before(g)

	began := time.Now()
	srv, err := faults.RestartAPIServer(ctx, s.cp.Config, 3*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(srv.Stop()).To(Succeed()) }) // before cp.Stop: cleanups run last first
	down := time.Since(began)

	restarted := time.Now()
	s.change(g)
	g.Eventually(func(g Gomega) []call { return s.calls.of("update", "changed") }, timeout).Should(HaveLen(1))
	handled := time.Since(restarted)
	s.handledOnce(g)
	record(t, "2f", outcome{Objects: 4, Outcome: "held", Figures: fmt.Sprintf(
		"the API server was away %s; a spec change, a creation and a deletion made after it came back were each handled once, within %s; nothing else ran again",
		seconds(down), seconds(handled))})
}
