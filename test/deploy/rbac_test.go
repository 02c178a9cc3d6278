package deploy_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// minimalNeeds returns what examples/minimal's handlers need: its registry,
// rebuilt here because the example is a main package.
func minimalNeeds(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "hello world"}, nil
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kopfv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rules, err := rbac.Permissions(reg, scheme, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// configRBAC returns the rules config/rbac grants, as `make check-rbac`
// reads them.
func configRBAC(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	rules, err := rbac.GrantedRules(kustomize(t, filepath.Join(root, "config", "rbac"), "build"))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestConfigRBACGrantsWhatTheMinimalOperatorNeeds(t *testing.T) {
	NewWithT(t).Expect(rbac.MissingPermissions(minimalNeeds(t), configRBAC(t))).To(BeEmpty())
}

func TestTheRBACCheckReportsARuleRemovedFromConfigRBAC(t *testing.T) {
	g := NewWithT(t)
	// Take out every rule that grants anything on kopfexamples/status.
	granted := slices.DeleteFunc(configRBAC(t), func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "kopfexamples/status")
	})
	g.Expect(rbac.MissingPermissions(minimalNeeds(t), granted)).To(Equal([]string{
		`patch kopfexamples/status in API group "kopf.dev"`,
	}))
}

// TestTheServiceAccountMayDoWhatTheHandlersNeed applies the installer's
// RBAC for real and asks the API server's authorizer, request by request,
// whether the operator's ServiceAccount may do what the handlers need:
// cluster-wide, except leader election's Lease, which is granted in the
// operator's namespace only.
func TestTheServiceAccountMayDoWhatTheHandlersNeed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	docs := installer(t)
	c, _ := clientWithWarnings(t)
	applyRBAC(t, c, docs)

	allowed := func(verb, group, resource, ns string) bool {
		res, sub, _ := strings.Cut(resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + namespace + ":gopf-controller-manager",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: group, Resource: res, Subresource: sub,
			},
		}}
		g.Expect(c.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}
	for _, rule := range minimalNeeds(t) {
		ns := ""
		if rule.APIGroups[0] == "coordination.k8s.io" {
			ns = namespace
		}
		for _, verb := range rule.Verbs {
			g.Expect(allowed(verb, rule.APIGroups[0], rule.Resources[0], ns)).To(BeTrue(),
				"%s %s in group %q, namespace %q", verb, rule.Resources[0], rule.APIGroups[0], ns)
		}
	}
	// The authorizer does refuse: nothing grants these.
	g.Expect(allowed("delete", "kopf.dev", "kopfexamples", "")).To(BeFalse())
	g.Expect(allowed("update", "coordination.k8s.io", "leases", "kube-system")).To(BeFalse())
}

// applyRBAC creates the installer's Namespace and applies its
// ServiceAccount and RBAC objects for real.
func applyRBAC(t *testing.T, c client.Client, docs []*unstructured.Unstructured) {
	t.Helper()
	createNamespace(t, c, docs)
	for _, d := range docs {
		if d.GroupVersionKind().Group == rbacv1.GroupName || d.GetKind() == "ServiceAccount" {
			err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(d.DeepCopy()), client.FieldOwner("gopf-deploy-test"), client.ForceOwnership)
			if err != nil {
				t.Fatalf("applying %s %s: %v", d.GetKind(), d.GetName(), err)
			}
		}
	}
}
