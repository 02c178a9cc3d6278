package envtest_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

// The same toolkit from a Ginkgo suite: the control plane shared by the test
// binary, an operator per spec.
func TestGinkgoSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "envtest toolkit in Ginkgo")
}

var _ = Describe("an operator under Ginkgo", func() {
	var (
		op    *envtest.Operator
		c     client.Client
		calls *envtest.Calls
	)
	BeforeEach(func() {
		cp, client, reg, recorded, err := fixture()
		Expect(err).NotTo(HaveOccurred())
		c, calls = client, recorded
		op, err = envtest.RunOperator(context.Background(), cp.Config, reg, envtest.OperatorOptions{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})

	It("handles a created object once", func(ctx SpecContext) {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ginkgo"}}
		Expect(c.Create(ctx, obj)).To(Succeed())
		Expect(envtest.WaitFor(ctx, c, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["create"].Raw != nil })).To(Succeed())
		Expect(calls.Count("create")).To(Equal(1))
		Expect(c.Delete(ctx, obj)).To(Succeed())
	})
})
