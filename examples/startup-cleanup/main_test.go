package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = runtime.NewScheme()

func init() {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kopfv1.AddToScheme(scheme)
}

// setUp returns a client and a new namespace.
func setUp(t *testing.T) (*envtest.ControlPlane, client.Client, string) {
	t.Helper()
	g := NewWithT(t)
	cp, err := envtest.Shared(envtest.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hooks-"}}
	g.Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return cp, k8s, ns.Name
}

func settings(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: settingsName},
		Data:       map[string]string{"greeting": "Good morning"},
	}
}

func TestStartupGatesTheHandlersAndCleanupRunsOnStop(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, k8s, ns := setUp(t)
	op, err := envtest.RunOperator(ctx, cp.Config, registry(k8s, ns), envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

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
	ctx := context.Background()
	cp, k8s, ns := setUp(t)
	g.Expect(k8s.Create(ctx, settings(ns))).To(Succeed())

	// envtest.RunOperator turns the metrics and probe servers off, so this
	// test builds a manager with both, as gopf.Main does.
	metricsAddr, probeAddr := freeAddress(g), freeAddress(g)
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)}, // for go test -count=N
		HealthProbeBindAddress: probeAddr,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gopf.SetupWithManager(mgr, registry(k8s, ns))).To(Succeed())
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		g.Expect(<-done).To(Succeed())
	})

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
