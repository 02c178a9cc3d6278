package reconcile_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// otherFinalizer is another controller's finalizer, which gopf's writes of
// its own must keep.
const otherFinalizer = "example.com/other"

// finalizerObject creates a KopfExample that another controller holds too,
// with a field its schema does not declare, and returns it as the API
// server answered.
func finalizerObject(g Gomega, env *envtest.Env, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"namespace": env.Namespace, "name": name, "finalizers": []any{otherFinalizer}},
		"spec":     map[string]any{"field": "value", "undeclared": map[string]any{"kept": true}}, // KopfExample's spec keeps unknown fields
	}}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	return obj
}

// managers are the field managers of obj's managedFields.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}

// releaseOther removes otherFinalizer, so that a deleted object goes.
func releaseOther(g Gomega, env *envtest.Env, key client.ObjectKey) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	g.Expect(env.Client.Get(env.Ctx, key, obj)).To(Succeed())
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == otherFinalizer }))
	g.Expect(env.Client.Update(env.Ctx, obj)).To(Succeed())
}

// The finalizer of an unstructured object, which holds every field the API
// server sent, is added and removed with an update of the whole object, the
// API server's cheapest write, and the update keeps what gopf's cache does
// not: the fields the schema does not declare, other controllers'
// finalizers, and the managedFields the cache drops.
func TestTheFinalizerOfAnUnstructuredObjectIsAnUpdateThatKeepsEverything(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	onCreateAndDelete[*unstructured.Unstructured](reg, &cs, "u", handlers.ForResource("kopfexamples.kopf.dev"))
	env.Start(reg, envtest.OperatorOptions{})

	before := apiServerCounts(g)
	created := finalizerObject(g, env, "whole")
	key := client.ObjectKeyFromObject(created)
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(created.GroupVersionKind())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(env.Ctx, key, got)).To(Succeed())
		g.Expect(got.GetFinalizers()).To(ConsistOf(otherFinalizer, Equal("gopf.dev/finalizer")))
	}, timeout).Should(Succeed())
	g.Expect(apiServerCounts(g)["PUT kopfexamples"]-before["PUT kopfexamples"]).To(BeNumerically(">=", 1), "the finalizer came with an update")
	g.Expect(got.Object["spec"]).To(Equal(created.Object["spec"]))
	g.Expect(got.Object["spec"]).To(HaveKey("undeclared"))
	g.Expect(managers(got)).To(ContainElements(managers(created)), "the creator's managedFields")

	g.Eventually(func() int { return cs.Count("u_create") }, timeout).Should(Equal(1))
	g.Expect(env.Client.Delete(env.Ctx, got)).To(Succeed())
	g.Eventually(func() int { return cs.Count("u_delete") }, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(env.Ctx, key, got)).To(Succeed())
		g.Expect(got.GetFinalizers()).To(ConsistOf(otherFinalizer), "gopf's finalizer goes, the other stays")
	}, timeout).Should(Succeed())
	g.Expect(got.Object["spec"]).To(Equal(created.Object["spec"]))
	g.Expect(managers(got)).To(ContainElements(managers(created)))
	releaseOther(g, env, key)
}

// Where the operator's role lets it patch a kind but not update it (a role
// generated before gopf updated unstructured objects' finalizers), the
// finalizer is patched instead, and the handlers run as they would.
func TestTheFinalizerIsPatchedWhereTheRoleGrantsNoUpdate(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	onCreateAndDelete[*unstructured.Unstructured](reg, &cs, "u", handlers.ForResource("kopfexamples.kopf.dev"))

	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	rules, err := rbac.Permissions(reg, scheme, mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElement(rule("kopf.dev", "kopfexamples", "get", "list", "patch", "update", "watch")))
	for i, r := range rules {
		if slices.Equal(r.Resources, []string{"kopfexamples"}) {
			rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "update" })
		}
	}
	user := "gopf-no-update-" + env.Namespace
	limited := as(t, env.Client, cfg, user, rules)
	op, err := envtest.RunOperator(env.Ctx, limited, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{env.Namespace}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
	})
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}})
		_ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}})
	})
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	limitedClient, err := client.New(limited, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	created := finalizerObject(g, env, "patched")
	key := client.ObjectKeyFromObject(created)
	g.Expect(limitedClient.Get(env.Ctx, key, probe)).To(Succeed())
	g.Expect(apierrors.IsForbidden(limitedClient.Update(env.Ctx, probe))).To(BeTrue(), "the operator's user may not update")

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(created.GroupVersionKind())
	g.Eventually(func() int { return cs.Count("u_create") }, timeout).Should(Equal(1))
	g.Expect(env.Client.Get(env.Ctx, key, got)).To(Succeed())
	g.Expect(got.GetFinalizers()).To(ConsistOf(otherFinalizer, Equal("gopf.dev/finalizer")))
	g.Expect(env.Client.Delete(env.Ctx, got)).To(Succeed())
	g.Eventually(func() int { return cs.Count("u_delete") }, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(env.Ctx, key, got)).To(Succeed())
		g.Expect(got.GetFinalizers()).To(ConsistOf(otherFinalizer))
	}, timeout).Should(Succeed())
	releaseOther(g, env, key)
}
