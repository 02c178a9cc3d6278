package envtest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

// The same toolkit from a Ginkgo suite: the control plane shared by the test
// binary, an operator and a namespace per spec.
func TestGinkgoSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "envtest toolkit in Ginkgo")
}

var _ = Describe("an operator under Ginkgo", func() {
	var (
		env   *envtest.Env
		calls *envtest.Calls
	)
	BeforeEach(func() {
		calls = &envtest.Calls{}
		env = envtest.Run(GinkgoT(), recorded(calls), envtest.OperatorOptions{Scheme: scheme})
	})

	It("handles a created object once", func(ctx SpecContext) {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "ginkgo"}}
		Expect(env.Client.Create(ctx, obj)).To(Succeed())
		Expect(envtest.WaitFor(ctx, env.Client, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["create"].Raw != nil })).To(Succeed())
		Expect(calls.Count("create")).To(Equal(1))
		Expect(env.Client.Delete(ctx, obj)).To(Succeed())
	})
})
