package webhook_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

// The control plane is shared by the tests of the package. Webhooks are
// cluster-wide, so each test's handlers select only the objects labelled
// with the test's name, and tests run one after another.
var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
	k8s    client.Client // talks to the API server directly
)

func TestMain(m *testing.M) {
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../config/crd/bases"}},
		BeforeTests: func(cp *envtest.ControlPlane) (err error) {
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := kopfv1.AddToScheme(scheme); err != nil {
				return err
			}
			cfg = cp.Config
			k8s, err = client.New(cfg, client.Options{Scheme: scheme})
			return err
		},
		// Every operator a test starts, and its webhook server, must be
		// gone, goroutines and all, once the test has stopped it.
		CheckGoroutines: true,
	})
}

// testLabel is the label value that selects a test's objects.
func testLabel(t *testing.T) string {
	s := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	return s[:min(40, len(s))]
}

// selectTest is the option that makes a handler see only the test's objects.
func selectTest(t *testing.T) handlers.Labels {
	return handlers.Labels{"gopf-test": testLabel(t)}
}

// operator is an operator running a test's handlers, with its webhook
// server.
type operator struct {
	*envtest.Operator
	srv *webhook.Server
}

// runOperator starts reg's handlers, with the webhook configurations named
// after the test and certificates in a folder of the test, and stops it
// when the test ends (unless the test has stopped it).
func runOperator(t *testing.T, ns string, reg *handlers.Registry) *operator {
	t.Helper()
	opts := webhook.Options{Name: testLabel(t) + ".test.gopf.dev", CertDir: t.TempDir()}
	op, err := envtest.RunOperator(context.Background(), cfg, reg, envtest.OperatorOptions{
		Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts,
	})
	if err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
	})
	return &operator{Operator: op, srv: op.Manager.GetWebhookServer().(*webhook.Server)}
}

// newNamespace creates a namespace for one test, deleted when it ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	return envtest.New(t, scheme).Namespace
}

// example returns a KopfExample of the test, in namespace ns.
func example(t *testing.T, ns, field string) *kopfv1.KopfExample {
	return &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kex-", Namespace: ns, Labels: map[string]string{"gopf-test": testLabel(t)}},
		Spec:       kopfv1.KopfExampleSpec{Field: field},
	}
}
