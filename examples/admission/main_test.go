package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/webhook"
)

func TestTheAPIServerCallsTheValidatingAndMutatingHandlers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(kopfv1.AddToScheme(scheme)).To(Succeed())

	// Dev mode, as `make run` has it: a free port on 127.0.0.1, a
	// self-signed CA, webhook configurations pointing at them by URL.
	op, err := envtest.RunOperator(ctx, cp.Config, registry(), envtest.OperatorOptions{
		Scheme:  scheme,
		Webhook: &webhook.Options{Name: "admission-example.gopf.dev", CertDir: t.TempDir()},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	newExample := func(field string) *kopfv1.KopfExample {
		return &kopfv1.KopfExample{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kopf-example-"},
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
