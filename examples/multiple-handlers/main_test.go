package main

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

// result decodes status.<id> of obj, or returns nil.
func result(obj *kopfv1.KopfExample, id string) map[string]any {
	var out map[string]any
	_ = json.Unmarshal(obj.Status.Extra[id].Raw, &out)
	return out
}

func TestAllHandlersOfACauseRunAndWriteTheirResultsTogether(t *testing.T) {
	g := NewWithT(t)
	var requests envtest.RequestCounter
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme, Requests: &requests})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	writes := func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }

	// Create: the finalizer first (for the delete handlers), then every
	// result and gopf's state in one status patch.
	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "many"},
		Spec:       kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["gopf"].Raw != nil })).To(Succeed())
	g.Expect(result(obj, "greet")).To(Equal(map[string]any{"message": "hello many"}))
	g.Expect(result(obj, "countItems")).To(Equal(map[string]any{"items": 2.0}))
	g.Expect(result(obj, "stamp")).To(HaveKey("at"))
	g.Expect(result(obj, "fieldChanged/spec.field")).To(Equal(map[string]any{"new": "value"}), "a nil value removes the key: results are merge patches")
	g.Expect(obj.Finalizers).To(ContainElement("gopf.dev/finalizer"))
	g.Expect(requests.Count("PATCH", "kopfexamples")).To(Equal(1), "the finalizer: %v", requests.Snapshot())
	g.Expect(requests.Count("PATCH", "kopfexamples/status")).To(Equal(1), "results and state together: %v", requests.Snapshot())
	g.Consistently(writes).WithTimeout(500 * time.Millisecond).Should(Equal(2))

	// Update: both update handlers and the field handler, one write.
	g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"changed"}}`)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["update_fn"].Raw != nil })).To(Succeed())
	g.Expect(result(obj, "describeChange")).To(Equal(map[string]any{"diff": []any{"(change, spec.field, value, changed)"}}))
	g.Expect(result(obj, "update_fn")).To(Equal(map[string]any{"changes": 1.0}))
	g.Expect(result(obj, "fieldChanged/spec.field")).To(Equal(map[string]any{"old": "value", "new": "changed"}))
	g.Consistently(writes).WithTimeout(500 * time.Millisecond).Should(Equal(3))

	// Restart: the resume handler runs once in the new process.
	env.Restart()
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["resumed"].Raw != nil })).To(Succeed())
	g.Expect(result(obj, "resumed")).To(Equal(map[string]any{"message": "resumed many"}))
	g.Expect(result(obj, "greet")).To(Equal(map[string]any{"message": "hello many"}), "create handlers do not run again")

	// Delete: both delete handlers run, then the finalizer goes, and with it
	// the object.
	requests.Reset()
	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, obj)).To(Succeed())
	g.Expect(writes()).To(Equal(1), "only the finalizer's removal: %v", requests.Snapshot())
}
