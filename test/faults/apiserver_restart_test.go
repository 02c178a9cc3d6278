package faults_test

import (
	"context"
	"fmt"
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
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(cp.Stop()).To(Succeed()) })
	admin, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "restarted"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	var calls callLog
	reg := handlers.NewRegistry()
	fn := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"field": obj.Spec.Field}, nil
	}
	handlers.OnCreate(reg, fn, handlers.ID("create"))
	handlers.OnUpdate(reg, fn, handlers.ID("update"))
	handlers.OnDelete(reg, fn, handlers.ID("delete"))
	runOperator(t, cp.Config, ns, reg)

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Expect(admin.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Eventually(func(g Gomega) []call { return calls.of("create", name) }, timeout).Should(HaveLen(1))
		g.Eventually(func(g Gomega) bool {
			var obj kopfv1.KopfExample
			g.Expect(admin.Get(ctx, key(name), &obj)).To(Succeed())
			return obj.Status.Extra["create"].Raw != nil
		}, timeout).Should(BeTrue())
	}

	began := time.Now()
	srv, err := faults.RestartAPIServer(ctx, cp.Config, 3*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(srv.Stop()).To(Succeed()) }) // before cp.Stop: cleanups run last first
	down := time.Since(began)

	restarted := time.Now()
	var changed kopfv1.KopfExample
	g.Expect(admin.Get(ctx, key("changed"), &changed)).To(Succeed())
	changed.Spec.Field = "changed after the restart"
	g.Expect(admin.Update(ctx, &changed)).To(Succeed())
	g.Expect(admin.Create(ctx, newExample(ns, "born"))).To(Succeed())
	g.Expect(admin.Delete(ctx, newExample(ns, "doomed"))).To(Succeed())

	g.Eventually(func(g Gomega) []call { return calls.of("update", "changed") }, timeout).Should(HaveLen(1))
	g.Eventually(func(g Gomega) []call { return calls.of("create", "born") }, timeout).Should(HaveLen(1))
	g.Expect(envtest.WaitGone(ctx, admin, newExample(ns, "doomed"))).To(Succeed())
	handled := time.Since(restarted)

	g.Consistently(func() map[string]int {
		return map[string]int{
			"create steady": len(calls.of("create", "steady")), "update steady": len(calls.of("update", "steady")),
			"create changed": len(calls.of("create", "changed")), "update changed": len(calls.of("update", "changed")),
			"create born": len(calls.of("create", "born")), "delete doomed": len(calls.of("delete", "doomed")),
			"update doomed": len(calls.of("update", "doomed")), "create doomed": len(calls.of("create", "doomed")),
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(map[string]int{
		"create steady": 1, "update steady": 0, "create changed": 1, "update changed": 1,
		"create born": 1, "delete doomed": 1, "update doomed": 0, "create doomed": 1,
	}))
	record(t, "2f", outcome{Objects: 4, Outcome: "held", Figures: fmt.Sprintf(
		"the API server was away %s; a spec change, a creation and a deletion made after it came back were each handled once, within %s; nothing else ran again",
		seconds(down), seconds(handled))})
}
