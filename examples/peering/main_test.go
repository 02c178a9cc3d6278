package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestOnlyTheHighestPriorityOperatorWorksAndTheOtherTakesOver(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme) // two operators, started below
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	peering := &kopfv1.ClusterKopfPeering{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	g.Expect(k8s.Create(ctx, peering)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, peering) })

	// What `--peering=<name> --priority=<n>` sets up.
	run := func(who string, priority int) *envtest.Operator {
		return env.Start(registry(who), envtest.OperatorOptions{
			Reconcile: reconcile.Options{Peering: &reconcile.PeeringOptions{
				Name: peering.Name, Priority: priority, Identity: who, Lifetime: 10 * time.Second,
			}},
		})
	}
	// The high one announces itself first, so the low one finds it there
	// when it starts and pauses from the start.
	high := run("high", 100)
	g.Expect(envtest.WaitFor(ctx, k8s, peering, func(p *kopfv1.ClusterKopfPeering) bool {
		_, ok := p.Status["high"]
		return ok
	})).To(Succeed())
	g.Expect(peering.Status["high"].Priority).To(Equal(100))
	run("low", 0)
	g.Expect(envtest.WaitFor(ctx, k8s, peering, func(p *kopfv1.ClusterKopfPeering) bool {
		return len(p.Status) == 2
	})).To(Succeed())

	handledBy := func(name string) string {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["create_fn"].Raw != nil })).To(Succeed())
		return string(obj.Status.Extra["create_fn"].Raw)
	}
	g.Expect(handledBy("first")).To(MatchJSON(`{"handledBy":"high"}`))

	// The high one stops and leaves the peering: the low one resumes.
	g.Expect(high.Stop()).To(Succeed())
	g.Expect(handledBy("second")).To(MatchJSON(`{"handledBy":"low"}`))
}
