package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

type kexAdmission = handlers.Admission[*kopfv1.KopfExample]

const timeout = 20 * time.Second

// rejectInvalid denies KopfExamples whose spec.field is "invalid".
func rejectInvalid(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
	if obj.Spec.Field == "invalid" {
		return handlers.Deny(http.StatusUnprocessableEntity, `spec.field must not be "invalid"`)
	}
	return nil
}

func TestAnInvalidKopfExampleIsRejectedWithTheHandlersMessage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, rejectInvalid, selectTest(t))
	runOperator(t, ns, reg)

	var err error
	g.Eventually(func() error {
		err = k8s.Create(ctx, example(t, ns, "invalid"))
		return err
	}, timeout).Should(HaveOccurred(), "the webhook never rejected the invalid object")
	g.Expect(err.Error()).To(ContainSubstring(`spec.field must not be "invalid"`))
	g.Expect(err.Error()).To(ContainSubstring("rejectinvalid.kopfexample.kopf.dev"), "the API server names the webhook")
	var status apierrors.APIStatus
	g.Expect(errors.As(err, &status)).To(BeTrue())
	g.Expect(status.Status().Code).To(BeEquivalentTo(http.StatusUnprocessableEntity))

	g.Expect(k8s.Create(ctx, example(t, ns, "valid"))).To(Succeed())
}

func TestAMutatingHandlersDefaultIsStored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnMutate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
		if obj.Spec.Duration == "" {
			obj.Spec.Duration = "1m"
		}
		return nil
	}, handlers.ID("default-duration"), selectTest(t))
	// The second handler sees the first one's change, and has no Go type.
	handlers.OnMutate(reg, func(ctx context.Context, obj *unstructured.Unstructured, a *handlers.Admission[*unstructured.Unstructured]) error {
		d, _, _ := unstructured.NestedString(obj.Object, "spec", "duration")
		a.Patch.SetLabel("duration", &d)
		return nil
	}, handlers.ID("label-duration"), handlers.ForResource("kopfexamples.kopf.dev"), selectTest(t))
	runOperator(t, ns, reg)

	g.Eventually(func(g Gomega) {
		obj := example(t, ns, "x")
		obj.Spec.Extra = map[string]apiextensionsv1.JSON{"kept": {Raw: []byte(`"yes"`)}}
		g.Expect(k8s.Create(ctx, obj, client.DryRunAll)).To(Succeed())
		g.Expect(obj.Spec.Duration).To(Equal("1m"))
	}, timeout).Should(Succeed(), "the webhook never set the default")

	obj := example(t, ns, "x")
	obj.Spec.Extra = map[string]apiextensionsv1.JSON{"kept": {Raw: []byte(`"yes"`)}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	stored := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	g.Expect(stored.Spec.Duration).To(Equal("1m"))
	g.Expect(stored.Labels).To(HaveKeyWithValue("duration", "1m"))
	g.Expect(stored.Spec.Field).To(Equal("x"))
	g.Expect(string(stored.Spec.Extra["kept"].Raw)).To(Equal(`"yes"`), "a field the handler did not touch was lost")
}

// warningRecorder collects the warnings the API server sends.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

func TestWarningsReachTheClient(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
		if obj.Spec.Field == "" {
			a.Warn("spec.field is empty; it will be required in v2")
		}
		return nil
	}, selectTest(t))
	runOperator(t, ns, reg)

	recorder := &warningRecorder{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = recorder
	hc, err := rest.HTTPClientFor(wcfg)
	g.Expect(err).NotTo(HaveOccurred())
	defer hc.CloseIdleConnections()
	warned, err := client.New(wcfg, client.Options{Scheme: scheme, HTTPClient: hc})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() []string {
		g.Expect(warned.Create(ctx, example(t, ns, ""), client.DryRunAll)).To(Succeed())
		return recorder.all()
	}, timeout).Should(ContainElement("spec.field is empty; it will be required in v2"))
}

func TestAPanickingHandlerDeniesTheRequestAndTheServerKeepsServing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
		if obj.Spec.Field == "panic" {
			panic("the handler has a bug")
		}
		return nil
	}, handlers.ID("buggy"), selectTest(t))
	runOperator(t, ns, reg)

	var err error
	g.Eventually(func() error {
		err = k8s.Create(ctx, example(t, ns, "panic"))
		return err
	}, timeout).Should(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`admission handler "buggy" panicked: the handler has a bug`))
	g.Expect(apierrors.IsInternalError(err)).To(BeTrue(), "a panic is a server error: %v", err)

	g.Expect(k8s.Create(ctx, example(t, ns, "fine"))).To(Succeed())
	g.Expect(k8s.Create(ctx, example(t, ns, "panic"))).NotTo(Succeed())
}

func TestConfigurationsExistWhileTheOperatorRunsAndOnlyPersistentWebhooksOutliveIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, rejectInvalid, selectTest(t))
	handlers.OnMutate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error { return nil },
		handlers.ID("noop"), selectTest(t), handlers.Operations(admissionv1.Create))
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *handlers.Admission[*corev1.ConfigMap]) error {
		return nil
	}, handlers.ID("keep"), handlers.Persistent(), handlers.IgnoreFailures(), selectTest(t))
	op := runOperator(t, ns, reg)
	name := op.srv.Options().Name
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})

	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, validating); err != nil {
			return err
		}
		return k8s.Get(ctx, client.ObjectKey{Name: name}, mutating)
	}, timeout).Should(Succeed())

	g.Expect(validating.Webhooks).To(HaveLen(2))
	v := validating.Webhooks[0]
	g.Expect(v.Name).To(Equal("rejectinvalid.kopfexample.kopf.dev." + name))
	g.Expect(v.Rules).To(HaveLen(1))
	g.Expect(v.Rules[0].APIGroups).To(Equal([]string{"kopf.dev"}))
	g.Expect(v.Rules[0].APIVersions).To(Equal([]string{"v1"}))
	g.Expect(v.Rules[0].Resources).To(Equal([]string{"kopfexamples"}))
	g.Expect(v.Rules[0].Operations).To(ConsistOf(admissionregistrationv1.Create, admissionregistrationv1.Update))
	g.Expect(*v.Rules[0].Scope).To(Equal(admissionregistrationv1.NamespacedScope))
	g.Expect(v.ClientConfig.CABundle).To(Equal(op.srv.CABundle()))
	g.Expect(*v.ClientConfig.URL).To(Equal(op.srv.Options().URL + "/validate/kopf.dev/v1/kopfexample/rejectinvalid"))
	g.Expect(v.ObjectSelector.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{
		Key: "gopf-test", Operator: metav1.LabelSelectorOpIn, Values: []string{testLabel(t)},
	}))
	g.Expect(*v.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
	g.Expect(v.AdmissionReviewVersions).To(Equal([]string{"v1"}))
	g.Expect(*validating.Webhooks[1].FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	g.Expect(validating.Webhooks[1].Rules[0].Resources).To(Equal([]string{"configmaps"}))

	g.Expect(mutating.Webhooks).To(HaveLen(1))
	g.Expect(mutating.Webhooks[0].Rules[0].Operations).To(Equal([]admissionregistrationv1.OperationType{admissionregistrationv1.Create}))
	g.Expect(mutating.Webhooks[0].ClientConfig.CABundle).To(Equal(op.srv.CABundle()))

	g.Expect(op.Stop()).To(Succeed())
	err := k8s.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the mutating configuration is still there: %v", err)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, validating)).To(Succeed())
	g.Expect(validating.Webhooks).To(HaveLen(1))
	g.Expect(validating.Webhooks[0].Name).To(Equal("keep.configmap." + name))
}

// servedSerial connects to the webhook server, trusting only bundle, and
// returns the serial number of the certificate it presents.
func servedSerial(g Gomega, srv *webhook.Server, bundle []byte) *big.Int {
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(bundle)).To(BeTrue())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Options().Port))
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

func TestARotatedCertificateIsServedWithoutRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	var calls atomic.Int32
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
		calls.Add(1)
		return rejectInvalid(ctx, obj, a)
	}, selectTest(t))
	op := runOperator(t, ns, reg)
	name := op.srv.Options().Name

	// admitted creates an object and reports whether the handler saw it.
	admitted := func(g Gomega) {
		before := calls.Load()
		g.Expect(k8s.Create(ctx, example(t, ns, "ok"), client.DryRunAll)).To(Succeed())
		g.Expect(calls.Load()).To(BeNumerically(">", before))
	}
	g.Eventually(admitted, timeout).Should(Succeed())
	firstBundle := op.srv.CABundle()
	first := servedSerial(g, op.srv, firstBundle)

	// A new serving certificate from the same CA: served from the next
	// connection on, and the API server keeps calling.
	g.Expect(webhook.Rotate(ctx, op.srv, false)).To(Succeed())
	second := servedSerial(g, op.srv, firstBundle)
	g.Expect(second).NotTo(Equal(first))
	g.Expect(op.srv.CABundle()).To(Equal(firstBundle))
	g.Eventually(admitted, timeout).Should(Succeed())

	// A new CA: the configurations get the new bundle, then the server
	// presents a certificate that only the new CA verifies.
	g.Expect(webhook.Rotate(ctx, op.srv, true)).To(Succeed())
	newBundle := op.srv.CABundle()
	g.Expect(newBundle).NotTo(Equal(firstBundle))
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, config)).To(Succeed())
	g.Expect(config.Webhooks[0].ClientConfig.CABundle).To(Equal(newBundle))
	third := servedSerial(g, op.srv, newBundle)
	g.Expect(third).NotTo(Equal(second))
	g.Expect(strings.Count(string(newBundle), "BEGIN CERTIFICATE")).To(Equal(2), "the old CA stays trusted until it expires")
	g.Eventually(admitted, timeout).Should(Succeed())
	g.Expect(k8s.Create(ctx, example(t, ns, "invalid"))).NotTo(Succeed())
}

func TestSetupNamesTheHandlerWhoseKindIsNotServed(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(ctx context.Context, obj *unstructured.Unstructured, a *handlers.Admission[*unstructured.Unstructured]) error {
		return nil
	}, handlers.ID("nowhere"), handlers.ForKind("example.com", "v1", "Nope"))
	opts := webhook.Options{CertDir: t.TempDir()}
	_, err := envtest.RunOperator(context.Background(), cfg, reg, envtest.OperatorOptions{Scheme: scheme, Webhook: &opts})
	if err == nil {
		t.Fatal("the operator started with a handler for a kind that does not exist")
	}
	for _, want := range []string{`handler "nowhere"`, "admission_test.go:", "example.com/v1, Kind=Nope", "not served"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestWithStaticConfigurationsTheKindPathServesEveryHandlerOfTheKind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, rejectInvalid, selectTest(t))
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kexAdmission) error {
		if obj.Spec.Field == "other" {
			return handlers.Deny(http.StatusBadRequest, "the second handler says no")
		}
		return nil
	}, selectTest(t))
	opts := webhook.Options{Name: testLabel(t) + ".test.gopf.dev", CertDir: t.TempDir(), StaticConfigurations: true}
	op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	srv := op.Manager.GetWebhookServer().(*webhook.Server)

	// A hand-written configuration, as config/webhook has, for the kind path.
	url := srv.Options().URL + "/validate/kopf.dev/v1/kopfexample"
	none := admissionregistrationv1.SideEffectClassNone
	static := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "static-" + opts.Name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vkopfexample.kopf.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: srv.CABundle()},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"kopf.dev"}, APIVersions: []string{"v1"}, Resources: []string{"kopfexamples"}}}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"gopf-test": testLabel(t)}},
		}},
	}
	g.Expect(k8s.Create(ctx, static)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, static) })

	g.Eventually(func() error {
		return k8s.Create(ctx, example(t, ns, "invalid"), client.DryRunAll)
	}, timeout).Should(MatchError(ContainSubstring(`spec.field must not be "invalid"`)))
	g.Expect(k8s.Create(ctx, example(t, ns, "other"), client.DryRunAll)).To(MatchError(ContainSubstring("the second handler says no")))
	g.Expect(k8s.Create(ctx, example(t, ns, "fine"), client.DryRunAll)).To(Succeed())

	err = k8s.Get(ctx, client.ObjectKey{Name: opts.Name}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "gopf created a configuration although told not to: %v", err)
}

func TestTheStaticManifestsAreAcceptedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		g.Expect(k8s.Create(context.Background(), obj, client.DryRunAll)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
}
