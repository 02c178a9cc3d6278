package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

func TestThePlainReconcilerAndGopfHandlersShareOneManager(t *testing.T) {
	g := NewWithT(t)
	scheme := newScheme()
	// No operator from envtest: this test builds the manager, as main does.
	env := envtest.New(t, scheme)
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	// The manager as main builds it, limited to the test's namespace and
	// without its servers; then the same setup as main.
	mgr, err := ctrl.NewManager(env.ControlPlane.Config, ctrl.Options{
		Scheme:                 scheme,
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
}
