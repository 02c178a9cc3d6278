package gopf_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// readOnlyUser returns the config of a user that may read KopfExamples
// and nothing else gopf needs, as a project's RBAC that knows nothing of
// gopf grants.
func readOnlyUser(env *envtest.Env) *rest.Config {
	return env.UserWith(rbacv1.PolicyRule{
		APIGroups: []string{kopfv1.GroupVersion.Group}, Resources: []string{"kopfexamples"}, Verbs: []string{"get", "list", "watch"},
	})
}

func TestSetupWithManagerLogsThePermissionsTheManagersUserLacks(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return "done", nil }, handlers.ID("create"))
	mgr, err := ctrl.NewManager(readOnlyUser(env), ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{env.Namespace: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	opts := reconcile.Options{Namespaces: []string{env.Namespace}}
	g.Expect(gopf.SetupWithManager(mgr, reg, opts)).To(Succeed())

	mark := logs.mark()
	ctx, cancel := context.WithCancel(env.Ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Expect(<-stopped).To(Succeed())
	}()
	var line logLine
	g.Eventually(func() (ok bool) {
		line, ok = logs.find(mark, "lacks permissions its handlers need")
		return ok
	}, timeout).Should(BeTrue(), "nothing said at start that the handlers' writes will fail")
	g.Expect(line.error).To(BeTrue())
	g.Expect(line.kv).To(ContainSubstring(`patch kopfexamples/status in API group "kopf.dev"`))
	g.Expect(line.kv).To(ContainSubstring("kind: ClusterRole"))
	g.Expect(line.kv).To(ContainSubstring("// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=patch"))
	g.Expect(line.kv).NotTo(ContainSubstring("resources=kopfexamples,verbs=get"), "what the user has is not reported")
	g.Expect(line.kv).NotTo(ContainSubstring("get kopfexamples"), "what the user has is not reported")

	// Opting in to stop instead.
	err = gopf.CheckPermissions(ctx, mgr, reg, opts)
	var pe *gopf.PermissionsError
	g.Expect(errors.As(err, &pe)).To(BeTrue(), "CheckPermissions returned %v", err)
	g.Expect(pe.Missing).To(ContainElement(
		rbacv1.PolicyRule{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples/status"}, Verbs: []string{"patch"}}))
	g.Expect(pe.Missing).To(ContainElement(HaveField("Resources", ConsistOf("events"))))
}

func TestCheckPermissionsFindsNothingMissingForAnAdministrator(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return "done", nil }, handlers.ID("create"))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gopf.CheckPermissions(context.Background(), mgr, reg)).To(Succeed())
}
