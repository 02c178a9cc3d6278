package envtest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

var scheme = runtime.NewScheme()

func TestMain(m *testing.M) {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kopfv1.AddToScheme(scheme)
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../config/crd/bases"}})
}

// fixture returns the shared control plane, a client, and a registry whose
// handlers are recorded in calls (the create handler also posts an Event).
func fixture() (*envtest.ControlPlane, client.Client, *handlers.Registry, *envtest.Calls, error) {
	cp, err := envtest.Shared(envtest.Options{})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	calls := &envtest.Calls{}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		c.Info("Created", "seen by the test")
		return map[string]any{"ok": true}, nil
	}, handlers.ID("create"))
	handlers.OnResume(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		return nil, nil
	}, handlers.ID("resume"))
	return cp, c, reg, calls, nil
}

func TestTheToolkitWaitsCollectsAndRestarts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, c, reg, calls, err := fixture()
	g.Expect(err).NotTo(HaveOccurred())
	op, err := envtest.RunOperator(ctx, cp.Config, reg, envtest.OperatorOptions{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = op.Stop() }()

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "toolkit"}}
	g.Expect(c.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, c, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["create"].Raw != nil })).To(Succeed())
	g.Expect(calls.WaitCount(ctx, "create", 1)).To(Succeed())
	g.Expect(calls.Of("create")[0].Name).To(Equal("toolkit"))

	g.Eventually(func(g Gomega) []string {
		events, err := envtest.Events(ctx, c, obj)
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for _, e := range events {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}, 10*time.Second).Should(ContainElement("Created"))

	op, err = op.Restart(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls.WaitCount(ctx, "resume", 1)).To(Succeed(), "a restarted operator resumes handled objects")
	g.Expect(calls.Count("create")).To(Equal(1))

	g.Expect(c.Delete(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, c, obj)).To(Succeed())

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	g.Expect(envtest.WaitFor(short, c, obj, func(*kopfv1.KopfExample) bool { return true })).To(MatchError(ContainSubstring("waiting for default/toolkit")))
	g.Expect(calls.WaitCount(short, "never", 1)).To(MatchError(ContainSubstring(`handler "never" was called 0 times`)))
}
