package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/webhook"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestTheAPIServerCallsTheValidatingAndMutatingHandlers(t *testing.T) {
	g := NewWithT(t)
	// Dev mode, as `make run` has it: a free port on 127.0.0.1, a
	// self-signed CA, webhook configurations pointing at them by URL.
	env := envtest.Run(t, registry(), envtest.OperatorOptions{
		Scheme:  scheme,
		Webhook: &webhook.Options{Name: "admission-example.gopf.dev", CertDir: t.TempDir()},
	})
	ctx, k8s := env.Ctx, env.Client
	newExample := func(field string) *kopfv1.KopfExample {
		return &kopfv1.KopfExample{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, GenerateName: "kopf-example-"},
			Spec:       kopfv1.KopfExampleSpec{Field: field},
		}
	}

	// The webhooks are active once the API server has seen their
	// configurations: then a forbidden value is rejected with the message.
	g.Eventually(func() error {
		return k8s.Create(ctx, newExample("forbidden"), client.DryRunAll)
	}, 30*time.Second).Should(MatchError(ContainSubstring(`spec.field must not be "forbidden"`)))

	obj := newExample("allowed")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	g.Expect(obj.Spec.Duration).To(Equal("1m"), "the mutating handler's default")
	g.Expect(obj.Annotations).To(HaveKey("kopf.dev/created-by"))
}
