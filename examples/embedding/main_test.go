package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

func TestThePlainReconcilerAndGopfHandlersShareOneManager(t *testing.T) {
	env := envtest.New(t, newScheme())
	runExample(t, env, env.ControlPlane.Config)
}

// The markers above main are what the manager needs: controller-gen makes
// a role of them, which --check-rbac accepts offline, the start-up check
// (CheckPermissions) accepts on the running manager, and under which the
// example works.
func TestTheExampleRunsUnderTheRoleControllerGenMakesOfItsMarkers(t *testing.T) {
	g := NewWithT(t)
	controllerGen := newest(filepath.Join("..", "..", "bin"), "controller-gen*")
	if controllerGen == "" {
		t.Skip(`no controller-gen in ../../bin: run "make controller-gen" (make test does)`)
	}
	dir := t.TempDir()
	out, err := exec.Command(controllerGen, "rbac:roleName=embedding-manager", "paths=.", "output:rbac:dir="+dir).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "controller-gen: %s", out)
	roleFile := filepath.Join(dir, "role.yaml")

	// Offline, as `go run . --check-rbac role.yaml` does.
	fs := flag.NewFlagSet("embedding", flag.ContinueOnError)
	runRBAC := gopf.AddRBACFlags(fs)
	g.Expect(fs.Parse([]string{"--check-rbac", roleFile})).To(Succeed())
	var report bytes.Buffer
	ran, err := runRBAC(&report, registry(), newScheme())
	g.Expect(ran).To(BeTrue())
	g.Expect(err).NotTo(HaveOccurred(), "--check-rbac refused the role of the example's own markers")

	env := envtest.New(t, newScheme())
	data, err := os.ReadFile(roleFile)
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.Unmarshal(data, &role)).To(Succeed())
	g.Expect(role.Rules).NotTo(BeEmpty())
	user := env.UserWith(role.Rules...)
	mgr := runExample(t, env, user)
	g.Expect(gopf.CheckPermissions(env.Ctx, mgr, registry(), reconcile.Options{Namespaces: []string{env.Namespace}})).To(Succeed(),
		"the running check refused the role --check-rbac accepts")
}

// runExample starts the manager as main builds it, limited to the test's
// namespace and without its servers, for the user of cfg, with the same
// setup as main; and checks that the plain Reconciler and gopf's handler
// both work.
func runExample(t *testing.T, env *envtest.Env, cfg *rest.Config) ctrl.Manager {
	t.Helper()
	g := NewWithT(t)
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 newScheme(),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)}, // for go test -count=N
		HealthProbeBindAddress: "0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(setup(mgr)).To(Succeed())
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		g.Expect(<-done).To(Succeed())
	})

	// The plain Reconciler works...
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings", Labels: map[string]string{managedLabel: "true"}},
		Data:       map[string]string{"a": "1", "b": "2"},
	}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, cm, func(cm *corev1.ConfigMap) bool { return cm.Annotations[keysAnnotation] == "2" })).To(Succeed())

	// ...and so do gopf's handlers, reading what it wrote from the shared cache.
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "embedded"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["create_fn"].Raw != nil })).To(Succeed())
	g.Expect(string(obj.Status.Extra["create_fn"].Raw)).To(MatchJSON(`{"configmaps":{"settings":"2"}}`))
	return mgr
}

// newest returns the last file of dir matching pattern, by name (the
// highest version), or "".
func newest(dir, pattern string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	sort.Strings(matches)
	if len(matches) == 0 {
		return ""
	}
	return matches[len(matches)-1]
}
