package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func settings(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: settingsName},
		Data:       map[string]string{"greeting": "Good morning"},
	}
}

func TestStartupGatesTheHandlersAndCleanupRunsOnStop(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme) // the registry needs the namespace
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	op := env.Start(registry(ns), envtest.OperatorOptions{})

	// The object comes before the settings: the startup handler is still
	// waiting for them, so nothing handles the object yet.
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "early"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	cm := settings(ns)
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())

	// Once the startup handler has the settings, the object is greeted with
	// them: it ran first.
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["greet"].Raw != nil })).To(Succeed())
	g.Expect(string(obj.Status.Extra["greet"].Raw)).To(MatchJSON(`{"message":"Good morning, early"}`))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Annotations).To(HaveKeyWithValue(stateAnnotation, "in use"))

	g.Expect(op.Stop()).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Annotations).To(HaveKeyWithValue(stateAnnotation, "released"), "cleanup ran before Stop returned")
}

// freeAddress returns a local address nothing listens on.
func freeAddress(g Gomega) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

func TestTheProbeReportsOnTheHealthEndpoints(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	g.Expect(k8s.Create(ctx, settings(ns))).To(Succeed())

	// Test operators have the metrics and probe servers off unless they are
	// given addresses, as gopf.Main's flags give them.
	metricsAddr, probeAddr := freeAddress(g), freeAddress(g)
	env.Start(registry(ns), envtest.OperatorOptions{MetricsBindAddress: metricsAddr, HealthProbeBindAddress: probeAddr})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probed"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["greet"].Raw != nil })).To(Succeed())

	get := func(g Gomega, url string) (int, string) {
		resp, err := http.Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	g.Eventually(func(g Gomega) {
		code, body := get(g, fmt.Sprintf("http://%s/probes", metricsAddr))
		g.Expect(code).To(Equal(http.StatusOK))
		var results map[string]map[string]int
		g.Expect(json.Unmarshal([]byte(body), &results)).To(Succeed())
		g.Expect(results["greetings"]["greeted"]).To(Equal(1))
	}).WithTimeout(envtest.DefaultTimeout).Should(Succeed())
	code, _ := get(g, fmt.Sprintf("http://%s/healthz/gopf-probes", probeAddr))
	g.Expect(code).To(Equal(http.StatusOK))
}
