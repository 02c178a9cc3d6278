package envtest_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// A test of an operator: the package's TestMain starts the control plane
// with the CRDs once (envtest.Main), and each test gets its client, a
// namespace of its own and the running operator from envtest.Run.
// Everything is stopped and deleted when the test ends.
func ExampleRun() {
	// In main_test.go:
	//
	//	func TestMain(m *testing.M) {
	//		envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
	//	}
	testHello := func(t *testing.T) {
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			return map[string]any{"message": "hello " + obj.Name}, nil
		}, handlers.ID("hello"))
		env := envtest.Run(t, reg, envtest.OperatorOptions{Scheme: scheme})

		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "world"}}
		if err := env.Client.Create(env.Ctx, obj); err != nil {
			t.Fatal(err)
		}
		// On a timeout, the error carries what the handlers last reported.
		err := envtest.WaitFor(env.Ctx, env.Client, obj, func(obj *kopfv1.KopfExample) bool {
			return obj.Status.Extra["hello"].Raw != nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = testHello // run by `go test` as func TestHello(t *testing.T)
}
