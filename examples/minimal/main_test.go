package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestTheCreateHandlerSaysHelloWorld(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s := env.Ctx, env.Client

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "kopf-example-1"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return string(obj.Status.Extra["create_fn"].Raw)
	}, 30*time.Second).Should(MatchJSON(`{"message":"hello world"}`))
}
