package reconcile_test

import (
	"context"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// Events as Kopf posts them: each distinct message is an Event of its own,
// a true repeat (same type, reason and message) raises the count of the
// Event it repeats, and a type of the handler's own (the API server takes
// any on core/v1 Events) is posted, not dropped.
func TestEveryDistinctEventIsPostedAndOnlyRepeatsAreFolded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Info("Progress", "step one")
		c.Info("Progress", "step two")
		c.Info("Progress", "step three")
		c.Info("Progress", "step one")
		c.Post("Audit", "Checked", "checked by the auditor")
		return nil, nil
	}, handlers.ID("create_fn"))
	runOperator(t, ns, reg)
	obj := newExample(ns, "posting")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	waitHandled(g, client.ObjectKeyFromObject(obj))

	type posted struct {
		Type, Reason, Message string
		Count                 int32
	}
	g.Eventually(func(g Gomega) []posted {
		var list corev1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []posted
		for _, e := range list.Items {
			if e.InvolvedObject.Name == obj.Name && e.InvolvedObject.Kind == "KopfExample" {
				out = append(out, posted{e.Type, e.Reason, e.Message, e.Count})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Message < out[j].Message })
		return out
	}, timeout).Should(Equal([]posted{
		{"Audit", "Checked", "checked by the auditor", 1},
		{"Normal", "Progress", "step one", 2},
		{"Normal", "Progress", "step three", 1},
		{"Normal", "Progress", "step two", 1},
	}))
}
