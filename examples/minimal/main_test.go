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
)

func TestTheCreateHandlerSaysHelloWorld(t *testing.T) {
	g := NewWithT(t)
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(kopfv1.AddToScheme(scheme)).To(Succeed())

	op, err := envtest.RunOperator(context.Background(), cp.Config, registry(), envtest.OperatorOptions{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kopf-example-1"}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return string(obj.Status.Extra["create_fn"].Raw)
	}, 30*time.Second).Should(MatchJSON(`{"message":"hello world"}`))
}
