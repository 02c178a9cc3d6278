package reconcile_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

func TestHandlersForACategoryOrASelectorHandleEveryKindTheyChooseIncludingLaterOnes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	crds := crdClient(t)
	const (
		groupA, groupB, groupLater = "sel-a.gopf.dev", "sel-b.gopf.dev", "sel-later.gopf.dev"
		groupOther                 = "sel-other.gopf.dev" // not in the category
	)
	inCategory := func(group string) func() {
		crd := widgetCRD(group)
		if group != groupOther {
			crd.Spec.Names.Categories = []string{"gadgets"}
		}
		t.Cleanup(func() { removeCRD(NewWithT(t), crds, crd) })
		return func() { installCRD(g, crds, crd) }
	}
	inCategory(groupA)()
	inCategory(groupB)()
	inCategory(groupOther)()
	installLater := inCategory(groupLater)

	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(_ context.Context, obj *unstructured.Unstructured, _ *handlers.Cause) (any, error) {
		return obj.GetAPIVersion(), nil
	}, handlers.ForCategory("gadgets"), handlers.ID("gadget"))
	handlers.OnCreate(reg, func(_ context.Context, obj *unstructured.Unstructured, _ *handlers.Cause) (any, error) {
		return obj.GetAPIVersion(), nil
	}, handlers.ForKinds(func(gvk schema.GroupVersionKind) bool { return gvk.Group == groupOther }), handlers.ID("chosen"))
	runOperator(t, ns, reg)

	widget := func(group string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/v1")
		u.SetKind("Widget")
		u.SetNamespace(ns)
		u.SetName("w")
		return u
	}
	result := func(group, id string) func(g Gomega) string {
		return func(g Gomega) string {
			u := widget(group)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
			v, _, _ := unstructured.NestedString(u.Object, "status", id)
			return v
		}
	}
	for _, group := range []string{groupA, groupB, groupOther} {
		g.Expect(k8s.Create(ctx, widget(group))).To(Succeed())
	}
	g.Eventually(result(groupA, "gadget"), timeout).Should(Equal(groupA + "/v1"))
	g.Eventually(result(groupB, "gadget"), timeout).Should(Equal(groupB + "/v1"))
	g.Eventually(result(groupOther, "chosen"), timeout).Should(Equal(groupOther + "/v1"))

	installLater()
	g.Eventually(func() error { return k8s.Create(ctx, widget(groupLater)) }, timeout).Should(Succeed())
	g.Eventually(result(groupLater, "gadget"), timeout).Should(Equal(groupLater + "/v1"))

	// Each handler ran only for the kinds it chose.
	g.Expect(result(groupOther, "gadget")(g)).To(BeEmpty())
	g.Expect(result(groupA, "chosen")(g)).To(BeEmpty())
	g.Expect(result(groupLater, "chosen")(g)).To(BeEmpty())
}

func TestPermissionsOfHandlersForACategoryWatchCRDsAndGrantNothingOnUnknownKinds(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) (any, error) { return nil, nil },
		handlers.ForCategory("gadgets"))
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(Equal([]rbacv1.PolicyRule{
		rule("", "events", "create", "patch"),
		rule("apiextensions.k8s.io", "customresourcedefinitions", "get", "list", "watch"),
		rule("coordination.k8s.io", "leases", "create", "get", "update"),
		rule("events.k8s.io", "events", "create", "patch"),
	}))
}
