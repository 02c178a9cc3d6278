package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// beforeKopf returns a fixture's object as it was created, before any
// operator stored anything on it, in namespace ns.
func beforeKopf(t *testing.T, ns, file string) *unstructured.Unstructured {
	t.Helper()
	u := kopfFixture(t, file)
	delete(u.Object, "status")
	for _, f := range []string{
		"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers", "annotations",
	} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if u.GetKind() == "ConfigMap" {
		unstructured.RemoveNestedField(u.Object, "metadata", "labels", "seen") // the handler adds it
	}
	u.SetNamespace(ns)
	return u
}

// kopfRecordsWithoutTimes decodes Kopf's annotations, leaving out the times
// in progress records, which are when the handlers ran, the essence gopf's
// records of finished handlers add (which Kopf does not read), and the
// context gopf's messages start with (the handler, the object, the retry):
// what Kopf writes is the end, the error of the handler itself.
func kopfRecordsWithoutTimes(annotations map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range annotations {
		var rec map[string]any
		if json.Unmarshal([]byte(v), &rec) == nil && rec["purpose"] != nil {
			delete(rec, "started")
			delete(rec, "stopped")
			delete(rec, "delayed")
			delete(rec, "handled")
			if msg, ok := rec["message"].(string); ok && strings.Contains(msg, ": ") {
				rec["message"] = msg[strings.LastIndex(msg, ": ")+2:]
			}
			out[k] = rec
			continue
		}
		out[k] = v
	}
	return out
}

// expectLikeKopf checks that got carries exactly what Kopf left on want:
// its annotations (times aside), finalizers and results, and nothing of
// gopf's own storage.
func expectLikeKopf(g Gomega, got, want *unstructured.Unstructured) {
	g.Expect(kopfRecordsWithoutTimes(kopfStateOf(got))).To(Equal(kopfRecordsWithoutTimes(kopfStateOf(want))))
	g.Expect(got.GetFinalizers()).To(Equal(want.GetFinalizers()))
	if want.Object["status"] == nil {
		g.Expect(got.Object["status"]).To(BeNil())
	} else {
		g.Expect(got.Object["status"]).To(Equal(want.Object["status"]))
	}
	g.Expect(got.GetLabels()).To(Equal(want.GetLabels()))
	for k := range got.GetAnnotations() {
		g.Expect(k).NotTo(HavePrefix("gopf.dev/"))
	}
}

func TestRollbackObjectsHandledInKopfsFormatCarryWhatKopfWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs, reconciled := &envtest.Calls{}, &envtest.Calls{}
	runOperator(t, ns, kopfHandlers(cs, reconciled), func(o *envtest.OperatorOptions) { o.Reconcile.Storage = gopfreconcile.StorageKopf })
	handled := func(g Gomega, obj *unstructured.Unstructured) string {
		return current(g, obj).GetAnnotations()[gopfreconcile.DefaultKopfPrefix+"/last-handled-configuration"]
	}

	for _, file := range []string{"kopfexample-created.yaml", "configmap-captured.yaml"} {
		obj := beforeKopf(t, ns, file)
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		want := kopfFixture(t, file)
		g.Eventually(func(g Gomega) { expectLikeKopf(g, current(g, obj), want) }, timeout).Should(Succeed(), file)
		g.Expect(handled(g, obj)).To(Equal(kopfStateOf(want)[gopfreconcile.DefaultKopfPrefix+"/last-handled-configuration"]), "byte for byte")
	}

	updated := beforeKopf(t, ns, "kopfexample-updated.yaml")
	g.Expect(unstructured.SetNestedField(updated.Object, "a", "spec", "field")).To(Succeed())
	g.Expect(k8s.Create(ctx, updated)).To(Succeed())
	g.Eventually(func(g Gomega) string { return handled(g, updated) }, timeout).ShouldNot(BeEmpty())
	patchSpec(g, updated, `{"field":"b"}`)
	g.Eventually(func(g Gomega) { expectLikeKopf(g, current(g, updated), kopfFixture(t, "kopfexample-updated.yaml")) }, timeout).Should(Succeed())

	flaky := beforeKopf(t, ns, "kopfexample-flaky.yaml")
	g.Expect(k8s.Create(ctx, flaky)).To(Succeed())
	g.Eventually(func(g Gomega) { expectLikeKopf(g, current(g, flaky), kopfFixture(t, "kopfexample-flaky.yaml")) }, timeout).Should(Succeed())

	deleting := beforeKopf(t, ns, "kopfexample-deleting.yaml")
	g.Expect(k8s.Create(ctx, deleting)).To(Succeed())
	g.Eventually(func(g Gomega) string { return handled(g, deleting) }, timeout).ShouldNot(BeEmpty())
	g.Expect(k8s.Delete(ctx, deleting)).To(Succeed())
	want := kopfFixture(t, "kopfexample-deleting.yaml")
	g.Eventually(func(g Gomega) { expectLikeKopf(g, current(g, deleting), want) }, timeout).Should(Succeed())

	// Let the stuck deletion go, as Kopf's next attempt would.
	g.Expect(k8s.Patch(ctx, deleting, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
}
