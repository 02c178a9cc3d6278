package main

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = runtime.NewScheme()

func init() {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kopfv1.AddToScheme(scheme)
}

func TestEachItemGetsItsOwnSubHandler(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := envtest.Shared(envtest.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "subhandlers-"}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	op, err := envtest.RunOperator(ctx, cp.Config, registry(), envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns.Name}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })

	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "itemised"},
		Spec:       kopfv1.KopfExampleSpec{Items: []string{"item1", "slow-item2", "item3"}},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())

	// The cause is complete once every sub-handler has succeeded: then the
	// essence is stored and no progress is left.
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		var state map[string]any
		_ = json.Unmarshal(obj.Status.Extra["gopf"].Raw, &state)
		return state["lastHandled"] != nil && state["progress"] == nil
	})).To(Succeed())
	for id, want := range map[string]string{
		"create_items":            `{"items":3}`,
		"create_items/item1":      `{"item":"item1","attempts":1}`,
		"create_items/slow-item2": `{"item":"slow-item2","attempts":2}`,
		"create_items/item3":      `{"item":"item3","attempts":1}`,
	} {
		g.Expect(obj.Status.Extra).To(HaveKey(id))
		g.Expect(string(obj.Status.Extra[id].Raw)).To(MatchJSON(want), id)
	}
}
