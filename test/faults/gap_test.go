package faults_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// gap is a scenario with a control plane of its own, where the operator
// loses sight of the API server for a while (the gap) and must handle what
// changed around it once: a namespace ns with three objects handled before
// the gap, "steady", "changed" and "doomed".
type gap struct {
	cp    *envtest.ControlPlane
	admin client.Client
	ns    string
	calls callLog
	reg   *handlers.Registry // create, update and delete handlers that log their calls
}

// newGap starts the scenario's control plane with apiServerFlags, its
// namespace ns and its handlers; the test runs the operator.
func newGap(t *testing.T, g Gomega, ns string, apiServerFlags map[string][]string) *gap {
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}, APIServerFlags: apiServerFlags})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(cp.Stop()).To(Succeed()) })
	admin, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	s := &gap{cp: cp, admin: admin, ns: ns, reg: handlers.NewRegistry()}
	fn := s.calls.recording()
	handlers.OnCreate(s.reg, fn, handlers.ID("create"))
	handlers.OnUpdate(s.reg, fn, handlers.ID("update"))
	handlers.OnDelete(s.reg, fn, handlers.ID("delete"))
	return s
}

func (s *gap) key(name string) client.ObjectKey { return client.ObjectKey{Namespace: s.ns, Name: name} }

// handled reports whether the create handler's result is in name's status.
func (s *gap) handled(name string) func(g Gomega) bool {
	return func(g Gomega) bool {
		var obj kopfv1.KopfExample
		g.Expect(s.admin.Get(context.Background(), s.key(name), &obj)).To(Succeed())
		return obj.Status.Extra["create"].Raw != nil
	}
}

// before creates the three objects and waits until each is handled.
func (s *gap) before(g Gomega) {
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Expect(s.admin.Create(context.Background(), newExample(s.ns, name))).To(Succeed())
	}
	for _, name := range []string{"steady", "changed", "doomed"} {
		g.Eventually(func(g Gomega) []call { return s.calls.of("create", name) }, timeout).Should(HaveLen(1))
		g.Eventually(s.handled(name), timeout).Should(BeTrue())
	}
}

// change changes "changed"'s spec, creates "born" and deletes "doomed".
func (s *gap) change(g Gomega) {
	ctx := context.Background()
	var changed kopfv1.KopfExample
	g.Expect(s.admin.Get(ctx, s.key("changed"), &changed)).To(Succeed())
	changed.Spec.Field = "changed around the gap"
	g.Expect(s.admin.Update(ctx, &changed)).To(Succeed())
	g.Expect(s.admin.Create(ctx, newExample(s.ns, "born"))).To(Succeed())
	g.Expect(s.admin.Delete(ctx, newExample(s.ns, "doomed"))).To(Succeed())
}

// handledOnce waits until each change of change is handled, and holds
// every handler to the calls it is due: nothing ran again.
func (s *gap) handledOnce(g Gomega) {
	g.Eventually(func(g Gomega) []call { return s.calls.of("update", "changed") }, timeout).Should(HaveLen(1))
	g.Eventually(func(g Gomega) []call { return s.calls.of("create", "born") }, timeout).Should(HaveLen(1))
	g.Expect(envtest.WaitGone(context.Background(), s.admin, newExample(s.ns, "doomed"))).To(Succeed())
	g.Eventually(s.handled("born"), timeout).Should(BeTrue())
	count := func(handler, name string) int { return len(s.calls.of(handler, name)) }
	g.Consistently(func() map[string]int {
		return map[string]int{
			"create steady": count("create", "steady"), "update steady": count("update", "steady"),
			"create changed": count("create", "changed"), "update changed": count("update", "changed"),
			"create born": count("create", "born"), "delete doomed": count("delete", "doomed"),
			"update doomed": count("update", "doomed"), "create doomed": count("create", "doomed"),
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(map[string]int{
		"create steady": 1, "update steady": 0, "create changed": 1, "update changed": 1,
		"create born": 1, "delete doomed": 1, "update doomed": 0, "create doomed": 1,
	}))
}
