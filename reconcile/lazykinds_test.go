package reconcile_test

import (
	"context"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/plan"
)

// crdClient talks to the API server with a scheme that knows CRDs.
func crdClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// widgetCRD is a namespaced CRD of kind Widget in group, with a status
// subresource and no schema to speak of.
func widgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	open := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &open}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// installCRD creates crd and waits until it is established.
func installCRD(g Gomega, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	ctx := context.Background()
	g.Expect(c.Create(ctx, crd.DeepCopy())).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(crd), got)).To(Succeed())
		established := false
		for _, cond := range got.Status.Conditions {
			established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		}
		g.Expect(established).To(BeTrue())
	}, timeout).Should(Succeed())
}

// removeCRD deletes crd and waits until it is gone.
func removeCRD(g Gomega, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	ctx := context.Background()
	g.Expect(client.IgnoreNotFound(c.Delete(ctx, crd.DeepCopy()))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
	}, timeout).Should(BeTrue())
}

func TestKindWhoseCRDAppearsLaterIsHandledAndStopsAndStartsWithIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	crds := crdClient(t)
	const group = "lazy.gopf.dev"
	crd := widgetCRD(group)
	t.Cleanup(func() { removeCRD(NewWithT(t), crds, crd) })

	var created atomic.Int64
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(_ context.Context, obj *unstructured.Unstructured, _ *handlers.Cause) (any, error) {
		created.Add(1)
		return map[string]any{"seen": obj.GetName()}, nil
	}, handlers.ForKind(group, "v1", "Widget"), handlers.ID("widget"))
	runOperator(t, ns, reg) // the CRD does not exist: the operator starts all the same

	widget := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/v1")
		u.SetKind("Widget")
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	handled := func(name string) func(g Gomega) any {
		return func(g Gomega) any {
			u := widget(name)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
			v, _, _ := unstructured.NestedString(u.Object, "status", "widget", "seen")
			return v
		}
	}

	installCRD(g, crds, crd)
	g.Eventually(func() error { return k8s.Create(ctx, widget("first")) }, timeout).Should(Succeed())
	g.Eventually(handled("first"), timeout).Should(Equal("first"))

	removeCRD(g, crds, crd)
	calls := created.Load()

	installCRD(g, crds, crd)
	g.Eventually(func() error { return k8s.Create(ctx, widget("second")) }, timeout).Should(Succeed())
	g.Eventually(handled("second"), timeout).Should(Equal("second"))
	g.Expect(created.Load()).To(Equal(calls + 1))
}

func TestThePlannerLeavesOutKindsTheClusterDoesNotServeYet(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) (any, error) { return nil, nil },
		handlers.ForKind("absent.gopf.dev", "v1", "Widget"), handlers.ID("widget"))
	handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), handlers.ID("example"))
	p, err := plan.NewPlanner(cfg, scheme, reg, engine.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Kinds()).To(ConsistOf(kopfv1.GroupVersion.WithKind("KopfExample")))
	g.Expect(p.Plan(context.Background(), plan.Selection{Namespace: newNamespace(t)}, func(*plan.ObjectStatus) error { return nil })).To(Succeed())
}
