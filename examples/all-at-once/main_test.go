package main

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

// result returns status.<id> as JSON text.
func result(obj *kopfv1.KopfExample, id string) string { return string(obj.Status.Extra[id].Raw) }

// handled reports whether the object's cause is complete: every handler has
// finished, so gopf stored the essence and dropped the progress.
func handled(obj *kopfv1.KopfExample) bool {
	var state struct {
		LastHandled string         `json:"lastHandled"`
		Progress    map[string]any `json:"progress"`
	}
	_ = json.Unmarshal(obj.Status.Extra["gopf"].Raw, &state)
	return state.LastHandled != "" && state.Progress == nil
}

func mergePatch(patch string) client.Patch {
	return client.RawPatch("application/merge-patch+json", []byte(patch))
}

func TestAllFeaturesTogether(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(200*time.Millisecond), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	// Create: the child, one sub-handler per item, a retried handler, the
	// field handler reading the index.
	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everything"},
		Spec:       kopfv1.KopfExampleSpec{Field: "x", Items: []string{"a", "bb"}},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, handled)).To(Succeed())
	g.Expect(result(obj, "create")).To(MatchJSON(`{"child":"everything-items"}`))
	g.Expect(result(obj, "items/a")).To(MatchJSON(`{"length":1}`))
	g.Expect(result(obj, "items/bb")).To(MatchJSON(`{"length":2}`))
	g.Expect(result(obj, "flaky")).To(MatchJSON(`{"attempts":2}`))
	g.Expect(result(obj, "siblings")).To(MatchJSON(`{"field":"x","objects":1}`))
	g.Expect(obj.Finalizers).To(ContainElement("gopf.dev/finalizer"), "for the delete handler and the daemon")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everything-items"}}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"item-0": "a", "item-1": "bb"}))
	g.Expect(metav1.GetControllerOf(cm).UID).To(Equal(obj.UID))

	// A second object with the same field: the index has both.
	twin := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twin"}, Spec: kopfv1.KopfExampleSpec{Field: "x"}}
	g.Expect(k8s.Create(ctx, twin)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, twin, func(obj *kopfv1.KopfExample) bool { return result(obj, "siblings") != "" })).To(Succeed())
	g.Expect(result(twin, "siblings")).To(MatchJSON(`{"field":"x","objects":2}`))

	// Update: the child follows.
	g.Expect(k8s.Patch(ctx, obj, mergePatch(`{"spec":{"items":["c"]}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, cm, func(cm *corev1.ConfigMap) bool { return cm.Data["item-0"] == "c" && len(cm.Data) == 1 })).To(Succeed())

	// Drift: a deleted child comes back.
	first := cm.UID
	g.Expect(k8s.Delete(ctx, cm)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, cm, func(cm *corev1.ConfigMap) bool { return cm.UID != first })).To(Succeed())

	// The spy and the daemon counted into the memo; the idle timer reports.
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		var counts struct{ Events, Beats int }
		_ = json.Unmarshal(obj.Status.Extra["report"].Raw, &counts)
		return counts.Events > 0 && counts.Beats > 0
	})).To(Succeed())

	// Delete: the delete handler runs and the daemon stops, then the
	// finalizer goes.
	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, obj)).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		events, err := envtest.Events(ctx, k8s, obj)
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for _, e := range events {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}).WithTimeout(envtest.DefaultTimeout).Should(ContainElements("Created", "Repaired", "Deleted"))
}
