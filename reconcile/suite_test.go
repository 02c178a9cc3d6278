package reconcile_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/kinds"
)

// The control plane is shared by every test of the package; each test uses
// its own namespace.
var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
	k8s    client.Client // talks to the API server directly, no cache
)

func TestMain(m *testing.M) {
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../config/crd/bases", kinds.CRDDir()}},
		BeforeTests: func(cp *envtest.ControlPlane) (err error) {
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := kopfv1.AddToScheme(scheme); err != nil {
				return err
			}
			if err := kinds.AddToScheme(scheme); err != nil {
				return err
			}
			cfg = cp.Config
			k8s, err = client.New(cfg, client.Options{Scheme: scheme})
			return err
		},
		// Every operator a test starts must be gone, goroutines and all, once
		// the test has stopped it.
		CheckGoroutines: true,
	})
}

// runOperator starts reg against the shared control plane, watching only
// namespace ns, and stops it when the test ends.
func runOperator(t *testing.T, ns string, reg *handlers.Registry, opts ...func(*envtest.OperatorOptions)) *envtest.Operator {
	t.Helper()
	o := envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}}
	for _, f := range opts {
		f(&o)
	}
	op, err := envtest.RunOperator(context.Background(), cfg, reg, o)
	if err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
	})
	return op
}

// newNamespace creates a namespace for one test, deleted when it ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	return envtest.New(t, scheme).Namespace
}

// newManager returns a manager for the shared control plane that is not started.
func newManager() (manager.Manager, error) {
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
}

// waitHandled waits until gopf has stored the object's last-handled essence:
// its current cause is done.
func waitHandled(g Gomega, key types.NamespacedName) {
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "lastHandled") }, timeout).ShouldNot(BeNil())
}

// waitFinalizer waits until the object carries gopf's finalizer.
func waitFinalizer(g Gomega, obj client.Object) {
	g.Eventually(func(g Gomega) []string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetFinalizers()
	}, timeout).Should(ContainElement("gopf.dev/finalizer"))
}
