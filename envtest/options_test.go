package envtest_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// deployed are the options a deployed operator gives gopf.MainWith.
var deployed = gopf.MainOptions{
	AddToScheme: []func(*runtime.Scheme) error{kopfv1.AddToScheme},
	Engine:      reconcile.Options{Prefix: "deployed.example.com"},
}

// deleteHandled is a registry whose delete handler needs gopf's finalizer.
func deleteHandled() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnDelete(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return nil, nil }, handlers.ID("delete"))
	return reg
}

func TestTheTestOperatorRunsWithTheOptionsGivenToMainWith(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, deleteHandled(), envtest.OperatorOptions{Main: &deployed})
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "deployed"}}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed(), "the client knows the kinds of Main.AddToScheme")
	g.Expect(envtest.WaitFor(env.Ctx, env.Client, obj, func(obj *kopfv1.KopfExample) bool {
		return slices.Contains(obj.Finalizers, "deployed.example.com/finalizer")
	})).To(Succeed(), "the finalizer of Main.Engine.Prefix; got %v", obj.Finalizers)
}

func TestMainOptionsAndOptionsOfTheirOwnAreNotMixed(t *testing.T) {
	for name, opts := range map[string]envtest.OperatorOptions{
		"Reconcile": {Main: &deployed, Reconcile: reconcile.Options{Prefix: "test.example.com"}},
		"Scheme":    {Main: &deployed, Scheme: envtest.NewScheme(kopfv1.AddToScheme)},
	} {
		env := envtest.New(t, scheme)
		_, err := envtest.RunOperator(env.Ctx, env.ControlPlane.Config, deleteHandled(), opts)
		if err == nil {
			t.Errorf("Main with %s of its own: the operator started", name)
		}
	}
}

func TestTheClientRefusesObjectsTheTestsOperatorCannotSee(t *testing.T) {
	g := NewWithT(t)
	calls := &envtest.Calls{}
	env := envtest.Run(t, recorded(calls), envtest.OperatorOptions{Scheme: scheme})
	outside := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "outside"}}
	g.Expect(env.Client.Create(env.Ctx, outside)).To(MatchError(ContainSubstring(`watches only the test's namespace`)))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-scoped-"}}
	g.Expect(env.Client.Create(env.Ctx, ns)).To(Succeed(), "cluster-scoped objects are not refused")
	g.Expect(env.Client.Delete(env.Ctx, ns)).To(Succeed())

	everywhere := envtest.Run(t, handlers.NewRegistry(), envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{env.Namespace, "other-*"}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "chosen-"}}
	g.Expect(everywhere.Client.Create(everywhere.Ctx, cm)).To(Succeed(), "namespaces the test chose are its own business")
	g.Expect(everywhere.Client.Delete(everywhere.Ctx, cm)).To(Succeed())
}
