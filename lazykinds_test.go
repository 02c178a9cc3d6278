package gopf_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

func TestStoppingAnOperatorOfEveryKindWhileItsKindsStartLogsNoError(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnEvent(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) error { return nil },
		handlers.ForKinds(func(schema.GroupVersionKind) bool { return true }), handlers.ID("everything"))
	env := envtest.New(t, nil)
	mark := logs.mark()
	op, err := envtest.RunOperator(env.Ctx, cfg, reg, envtest.OperatorOptions{Namespaces: []string{env.Namespace}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool { return logs.contains(mark, "kind is served now") }, timeout).Should(BeTrue(), "no kind started")
	g.Expect(op.Stop()).To(Succeed())
	g.Expect(logs.since(mark, true)).To(BeEmpty(), "a stop during the start is no error")
}
