package reconcile_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// as returns a client configuration that acts as user, bound to a
// ClusterRole of rules made for it.
func as(t *testing.T, admin client.Client, cfg *rest.Config, user string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s for %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, user, err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// TestTheGeneratedRoleIsEnoughForAHandlerThatCreatesAndAdoptsChildren runs
// an operator as a user that has exactly the rules Permissions gives, on an
// API server that checks blockOwnerDeletion
// (OwnerReferencesPermissionEnforcement), as production clusters do: a
// create handler that makes an adopted ConfigMap works. Without the rules
// that handlers.Uses and the adoption bring, the same request is refused.
func TestTheGeneratedRoleIsEnoughForAHandlerThatCreatesAndAdoptsChildren(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := envtest.Start(envtest.Options{
		CRDDirectoryPaths: []string{"../config/crd/bases"},
		AdmissionPlugins:  []string{"OwnerReferencesPermissionEnforcement"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	admin, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())

	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cm := &corev1.ConfigMap{Data: map[string]string{"field": obj.Spec.Field}}
		if err := objects.Adopt(obj, cm); err != nil {
			return nil, err
		}
		if err := c.Client.Create(ctx, cm); err != nil {
			return nil, err
		}
		return cm.Name, nil
	}, handlers.ID("child"), handlers.Uses(&corev1.ConfigMap{}, "create"))

	httpClient, err := rest.HTTPClientFor(cp.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cp.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	rules, err := rbac.Permissions(reg, scheme, mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElements(
		rule("", "configmaps", "create"),
		rule("kopf.dev", "kopfexamples/finalizers", "update"),
	))

	op, err := envtest.RunOperator(ctx, as(t, admin, cp.Config, "gopf-operator", rules), reg, envtest.OperatorOptions{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
	})
	owner := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}, Spec: kopfv1.KopfExampleSpec{Field: "value"}}
	g.Expect(admin.Create(ctx, owner)).To(Succeed())
	var child string
	g.Eventually(func(g Gomega) {
		got := &kopfv1.KopfExample{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(owner), got)).To(Succeed())
		g.Expect(got.Status.Extra).To(HaveKey("child"), "the handler's result")
		g.Expect(json.Unmarshal(got.Status.Extra["child"].Raw, &child)).To(Succeed())
		g.Expect(child).To(HavePrefix("owner-"))
	}, time.Minute).Should(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: child}, cm)).To(Succeed())
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("BlockOwnerDeletion", HaveValue(BeTrue()))))

	// The same request by identities that lack one of the new rules.
	adopted := func() *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		owner.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
		g.Expect(objects.Adopt(owner, cm)).To(Succeed())
		return cm
	}
	without := func(user string, drop rbacv1.PolicyRule) client.Client {
		kept := slices.DeleteFunc(slices.Clone(rules), func(r rbacv1.PolicyRule) bool {
			return slices.Equal(r.Resources, drop.Resources) && slices.Equal(r.APIGroups, drop.APIGroups)
		})
		g.Expect(kept).To(HaveLen(len(rules) - 1))
		if drop.Resources[0] == "configmaps" {
			kept = append(kept, rule("", "configmaps", "get", "list", "watch")) // still readable, as before Uses
		}
		c, err := client.New(as(t, admin, cp.Config, user, kept), client.Options{Scheme: scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	err = without("no-create", rule("", "configmaps")).Create(ctx, adopted())
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "without create on configmaps: %v", err)
	err = without("no-finalizers", rule("kopf.dev", "kopfexamples/finalizers")).Create(ctx, adopted())
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "without update on kopfexamples/finalizers: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("blockOwnerDeletion")))
}
