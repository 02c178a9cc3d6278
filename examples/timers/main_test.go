package main

import (
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

// result returns status.<id> as JSON text.
func result(obj *kopfv1.KopfExample, id string) string { return string(obj.Status.Extra[id].Raw) }

func TestTimersReportWhatTheyFindAndWriteOnlyChanges(t *testing.T) {
	g := NewWithT(t)
	var requests envtest.RequestCounter
	env := envtest.Run(t, registry(300*time.Millisecond), envtest.OperatorOptions{Scheme: scheme, Requests: &requests})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "timed"},
		Spec:       kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		return result(obj, "count_items") != "" && result(obj, "check_health") != "" && result(obj, "settle") != ""
	})).To(Succeed())
	g.Expect(result(obj, "count_items")).To(MatchJSON(`{"items":2}`))
	g.Expect(result(obj, "check_health")).To(MatchJSON(`{"healthy":true}`))
	g.Expect(result(obj, "settle")).To(MatchJSON(`{"field":"value"}`))
	g.Expect(obj.Finalizers).To(ContainElement("gopf.dev/finalizer"))

	// The timers keep running and keep finding the same: nothing is written.
	writes := requests.Writes("kopfexamples", "kopfexamples/status")
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }).WithTimeout(time.Second).Should(Equal(writes))

	// A change: each timer reports it on its next run.
	g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"broken","items":["item1"]}}`)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		return result(obj, "count_items") == `{"items":1}` && result(obj, "check_health") == `{"healthy":false}` && result(obj, "settle") == `{"field":"broken"}`
	})).To(Succeed())
}
