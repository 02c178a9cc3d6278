package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestEachItemGetsItsOwnSubHandler(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "itemised"},
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
