package reconcile_test

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
	"github.com/gopf-dev/gopf/handlers"
)

// TestAFilterThatReadsAnIndexAdmitsOnlyTheObjectsTheIndexNames ports
// Kopf's when= over an index: KopfExamples are handled only when a
// ConfigMap names them. One named before the operator starts is handled at
// start (the filter runs once the index has seen every ConfigMap); one
// named later starts matching at its next event and counts as created.
func TestAFilterThatReadsAnIndexAdmitsOnlyTheObjectsTheIndexNames(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	naming := func(name, target string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"example": target}}
	}
	g.Expect(k8s.Create(ctx, naming("names-a", "ex-a"))).To(Succeed())
	exA, exB := newExample(ns, "ex-a"), newExample(ns, "ex-b")
	g.Expect(k8s.Create(ctx, exA)).To(Succeed())
	g.Expect(k8s.Create(ctx, exB)).To(Succeed())

	reg := handlers.NewRegistry()
	wanted := handlers.OnIndex(reg, "wanted", func(cm *corev1.ConfigMap, _ *handlers.Cause) map[string]string {
		return map[string]string{cm.Data["example"]: cm.Name}
	})
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"reason": string(c.Reason), "namedBy": wanted.Get(c.Indexes, obj.Name)}, nil
	}, handlers.ID("clone"), handlers.When(func(obj *kopfv1.KopfExample, c *handlers.Cause) bool {
		return len(wanted.Get(c.Indexes, obj.Name)) > 0
	}))
	runOperator(t, ns, reg)

	keyA, keyB := client.ObjectKeyFromObject(exA), client.ObjectKeyFromObject(exB)
	g.Eventually(func(g Gomega) any { return statusField(g, keyA, "clone", "namedBy") }, timeout).Should(Equal([]any{"names-a"}))
	// Stealth: the object no index entry names gets nothing at all.
	g.Expect(statusField(g, keyB, "clone")).To(BeNil())
	g.Expect(k8s.Get(ctx, keyB, exB)).To(Succeed())
	g.Expect(exB.Finalizers).To(BeEmpty())

	// The index changes: now a ConfigMap names ex-b, which is handled at
	// its next event, as an object that starts matching.
	g.Expect(k8s.Create(ctx, naming("names-b", "ex-b"))).To(Succeed())
	g.Eventually(func(g Gomega) any {
		patchSpec(g, exB, fmt.Sprintf(`{"field":"%d"}`, time.Now().UnixNano()))
		return statusField(g, keyB, "clone", "namedBy")
	}, timeout).Should(Equal([]any{"names-b"}))
	g.Expect(statusField(g, keyB, "clone", "reason")).To(Equal(string(handlers.ReasonCreate)))
}
