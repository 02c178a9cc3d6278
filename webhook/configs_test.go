package webhook

import (
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func allowCM(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error { return nil }

func hooksOf(t *testing.T, reg *handlers.Registry) []*hook {
	t.Helper()
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	var hooks []*hook
	for _, r := range contract.SetOf(reg).Handlers(spec.KindValidate, spec.KindMutate) {
		id := sanitizeID(r.Options.ID)
		hooks = append(hooks, &hook{
			reg: r, gvk: gvk, resource: "configmaps", namespaced: true,
			path: kindPath(r.Kind == spec.KindMutate, gvk) + "/" + id,
			name: webhookName(id, gvk, "op.gopf.dev"),
		})
	}
	return hooks
}

func urlConfig(path string) admissionregistrationv1.WebhookClientConfig {
	u := "https://127.0.0.1:1234" + path
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: []byte("CA")}
}

func TestConfigurationsHoldOneWebhookPerHandlerWithItsSettings(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, allowCM, handlers.ID("check_data"), handlers.Labels{"app": "web"},
		handlers.IgnoreFailures(), handlers.SideEffects(), handlers.WebhookTimeout(5*time.Second), handlers.Persistent())
	handlers.OnMutate(reg, allowCM, handlers.ID("defaults"), handlers.SubResource("*"),
		handlers.Operations(admissionv1.Create, admissionv1.Delete))

	v, m := configurations("op.gopf.dev", hooksOf(t, reg), nil, urlConfig, false)
	if v.Name != "op.gopf.dev" || m.Name != "op.gopf.dev" || v.Labels[managedByLabel] != "gopf" {
		t.Errorf("metadata = %v / %v", v.ObjectMeta, m.ObjectMeta)
	}
	if len(v.Webhooks) != 1 || len(m.Webhooks) != 1 {
		t.Fatalf("webhooks: %d validating, %d mutating; want one each", len(v.Webhooks), len(m.Webhooks))
	}
	vw, mw := v.Webhooks[0], m.Webhooks[0]
	if vw.Name != "check-data.configmap.op.gopf.dev" {
		t.Errorf("name = %s", vw.Name)
	}
	if *vw.ClientConfig.URL != "https://127.0.0.1:1234/validate/core/v1/configmap/check-data" || string(vw.ClientConfig.CABundle) != "CA" {
		t.Errorf("client config = %s %q", *vw.ClientConfig.URL, vw.ClientConfig.CABundle)
	}
	namespaced := admissionregistrationv1.NamespacedScope
	wantRule := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Scope: &namespaced},
	}
	if !reflect.DeepEqual(vw.Rules, []admissionregistrationv1.RuleWithOperations{wantRule}) {
		t.Errorf("rules = %+v", vw.Rules)
	}
	if *vw.FailurePolicy != admissionregistrationv1.Ignore || *vw.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun || *vw.TimeoutSeconds != 5 {
		t.Errorf("policy %s, side effects %s, timeout %d", *vw.FailurePolicy, *vw.SideEffects, *vw.TimeoutSeconds)
	}
	wantSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
	if !reflect.DeepEqual(vw.ObjectSelector, wantSelector) || !reflect.DeepEqual(vw.AdmissionReviewVersions, []string{"v1"}) {
		t.Errorf("selector %v, review versions %v", vw.ObjectSelector, vw.AdmissionReviewVersions)
	}
	if got := mw.Rules[0].Resources; !reflect.DeepEqual(got, []string{"configmaps", "configmaps/*"}) {
		t.Errorf("mutating resources = %v", got)
	}
	if got := mw.Rules[0].Operations; !reflect.DeepEqual(got, []admissionregistrationv1.OperationType{"CREATE", "DELETE"}) {
		t.Errorf("mutating operations = %v", got)
	}
	if *mw.FailurePolicy != admissionregistrationv1.Fail || *mw.SideEffects != admissionregistrationv1.SideEffectClassNone || *mw.TimeoutSeconds != 10 {
		t.Errorf("mutating defaults: policy %s, side effects %s, timeout %d", *mw.FailurePolicy, *mw.SideEffects, *mw.TimeoutSeconds)
	}

	v, m = configurations("op.gopf.dev", hooksOf(t, reg), nil, urlConfig, true)
	if len(v.Webhooks) != 1 || len(m.Webhooks) != 0 {
		t.Errorf("after shutdown: %d validating, %d mutating webhooks; want only the persistent validator", len(v.Webhooks), len(m.Webhooks))
	}
}

func TestAMutatingWebhookHasEveryFieldOfTheValidatingOne(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnMutate(reg, allowCM, handlers.ID("defaults"), handlers.Labels{"app": "web"})
	w := webhookFor(hooksOf(t, reg)[0], urlConfig)
	w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "all", Expression: "true"}}
	mw := asMutating(w)
	vv, mv := reflect.ValueOf(w), reflect.ValueOf(mw)
	for i := range vv.NumField() {
		name := vv.Type().Field(i).Name
		if vv.Field(i).IsZero() {
			t.Errorf("field %s is not set in the test, so it proves nothing", name)
		}
		if got := mv.FieldByName(name); !got.IsValid() || !reflect.DeepEqual(got.Interface(), vv.Field(i).Interface()) {
			t.Errorf("field %s: mutating %v, validating %v", name, got, vv.Field(i))
		}
	}
	if mw.ReinvocationPolicy == nil || *mw.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocation policy = %v, want Never", mw.ReinvocationPolicy)
	}
}

func TestServiceModePointsTheConfigurationsAtTheService(t *testing.T) {
	srv := &Server{opts: Options{Service: &Service{Namespace: "ops", Name: "webhooks", Port: 443}}}
	cc := srv.clientConfig("/validate/core/v1/pod/x", []byte("CA"))
	if cc.URL != nil || cc.Service == nil || cc.Service.Namespace != "ops" || cc.Service.Name != "webhooks" ||
		*cc.Service.Path != "/validate/core/v1/pod/x" || *cc.Service.Port != 443 {
		t.Errorf("client config = %+v", cc)
	}
}

func TestPathsAndWebhookNamesAreDerivedFromKindAndID(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	if got := kindPath(false, gvk); got != "/validate/kopf.dev/v1/kopfexample" {
		t.Errorf("kind path = %s", got)
	}
	if got := kindPath(true, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}); got != "/mutate/core/v1/pod" {
		t.Errorf("kind path = %s", got)
	}
	for id, want := range map[string]string{"checkField": "checkfield", "check_field": "check-field", "a/b": "a.b", "_x_": "x", "Ünï": "n"} {
		if got := sanitizeID(id); got != want {
			t.Errorf("sanitizeID(%q) = %q, want %q", id, got, want)
		}
	}
	if got := webhookName("check", gvk, "op.gopf.dev"); got != "check.kopfexample.kopf.dev.op.gopf.dev" {
		t.Errorf("webhook name = %s", got)
	}
}

func TestOptionDefaultsForDevelopmentAndForAService(t *testing.T) {
	dev, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if dev.Host != "127.0.0.1" || dev.Port == 0 || !strings.HasPrefix(dev.URL, "https://127.0.0.1:") || !strings.HasSuffix(dev.Name, ".gopf.dev") {
		t.Errorf("dev defaults = %+v", dev)
	}
	if !reflect.DeepEqual(dev.Hosts, []string{"localhost", "127.0.0.1"}) {
		t.Errorf("dev hosts = %v", dev.Hosts)
	}
	svc, err := Options{Name: "op.gopf.dev", Service: &Service{Namespace: "ops", Name: "hooks"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if svc.Host != "" || svc.Port != 9443 || svc.URL != "" || svc.Service.Port != 443 {
		t.Errorf("service defaults = %+v", svc)
	}
	if !reflect.DeepEqual(svc.Hosts, []string{"localhost", "127.0.0.1", "hooks.ops.svc", "hooks.ops.svc.cluster.local"}) {
		t.Errorf("service hosts = %v", svc.Hosts)
	}
	for _, bad := range []Options{{Name: "Not_A_Name"}, {URL: "http://insecure"}, {Service: &Service{Name: "x"}}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
	if got := defaultName("/usr/bin/My_Operator"); got != "my-operator.gopf.dev" {
		t.Errorf("defaultName = %s", got)
	}
}

func TestBindFlagsSetsTheOptions(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	err := fs.Parse([]string{
		"--webhook-bind-address=:9443", "--webhook-service=ops/hooks:8443", "--webhook-cert-dir=/certs",
		"--webhook-cert-files", "--webhook-hosts=a.example, 10.0.0.1", "--webhook-configuration-name=op.example.com",
		"--webhook-manage-configurations=false",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Name: "op.example.com", Port: 9443, Service: &Service{Namespace: "ops", Name: "hooks", Port: 8443},
		CertDir: "/certs", CertificatesFromFiles: true, Hosts: []string{"a.example", "10.0.0.1"}, StaticConfigurations: true,
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options = %+v\nwant      %+v", o, want)
	}
}
