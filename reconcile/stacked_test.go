package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// TestOneFunctionOnResumeCreateAndUpdateKeepsKopfsID registers one function
// as Kopf's stacked @kopf.on.resume, @kopf.on.create and @kopf.on.update
// with Kopf's id flaky_fn, on an object Kopf left with a create of flaky_fn
// unfinished: gopf continues Kopf's retries under that id, then runs the
// function for the update and, after a restart, for the resume, each time
// into status.flaky_fn. An update made while the operator was down runs it
// once, not once for the update and once for the resume.
func TestOneFunctionOnResumeCreateAndUpdateKeepsKopfsID(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	obj := recreateAsKopfLeftIt(t, ns, "kopfexample-flaky.yaml")
	key := client.ObjectKeyFromObject(obj)
	var cs envtest.Calls
	fn := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return map[string]any{"reason": string(c.Reason), "retry": c.Retry}, nil
	}
	reg := handlers.NewRegistry()
	handlers.OnResume(reg, fn, handlers.ID("flaky_fn"))
	handlers.OnCreate(reg, fn, handlers.ID("flaky_fn"))
	handlers.OnUpdate(reg, fn, handlers.ID("flaky_fn"))
	g.Expect(reg.Err()).To(Succeed())
	op := runOperator(t, ns, reg)

	g.Eventually(func(g Gomega) any { return statusField(g, key, "flaky_fn", "reason") }, timeout).Should(Equal("create"))
	g.Expect(statusField(g, key, "flaky_fn", "retry")).To(BeNumerically("==", 1), "Kopf's progress of flaky_fn was read")

	touch := func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		patchSpec(g, u, fmt.Sprintf(`{"field":"%d"}`, time.Now().UnixNano()))
	}
	touch(g)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "flaky_fn", "reason") }, timeout).Should(Equal("update"))
	g.Expect(statusField(g, key, "flaky_fn", "retry")).To(BeNumerically("==", 0), "the update starts its own progress")

	op, err := op.Restart(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	g.Eventually(func(g Gomega) any { return statusField(g, key, "flaky_fn", "reason") }, timeout).Should(Equal("resume"))

	g.Expect(op.Stop()).To(Succeed())
	before := cs.Count("flaky_fn")
	touch(g)
	op, err = op.Restart(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	g.Eventually(func(g Gomega) any { return statusField(g, key, "flaky_fn", "reason") }, timeout).Should(Equal("update"))
	g.Consistently(func() int { return cs.Count("flaky_fn") }, settle).Should(Equal(before + 1))
}
