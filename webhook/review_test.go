package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

type cmAdmission = handlers.Admission[*corev1.ConfigMap]

// reviewerFor builds the kind-level reviewer of the handlers in reg.
func reviewerFor(t *testing.T, reg *handlers.Registry, mutating bool) *reviewer {
	t.Helper()
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	rv := &reviewer{mutating: mutating}
	for _, r := range contract.SetOf(reg).Handlers(spec.KindValidate, spec.KindMutate) {
		rv.hooks = append(rv.hooks, &hook{reg: r})
	}
	return rv
}

// request makes an admission request for a ConfigMap given as JSON.
func request(op admissionv1.Operation, object, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid-1", Operation: op, Name: "cm", Namespace: "ns",
	}}
	if object != "" {
		req.Object = runtime.RawExtension{Raw: []byte(object)}
	}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns","labels":{"app":"web"}},"data":{"a":"1"},"unknownToGo":{"keep":true}}`

func TestValidatorsAllRunAndTheHighestRankingFailureDecides(t *testing.T) {
	reg := handlers.NewRegistry()
	var calls []string
	add := func(id string, err error) {
		handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
			calls = append(calls, id)
			a.Warn("warning from " + id)
			return err
		}, handlers.ID(id))
	}
	add("plain", errors.New("plain failure"))
	add("temporary", handlers.Temporary(errors.New("try later"), 0))
	add("ok", nil)
	add("denied", handlers.Deny(http.StatusUnprocessableEntity, "data.a must be 2"))
	add("permanent", handlers.Permanent(errors.New("never")))

	resp := reviewerFor(t, reg, false).Handle(context.Background(), request(admissionv1.Create, configMap, ""))
	if resp.Allowed || resp.Result.Code != 422 || resp.Result.Message != "data.a must be 2" {
		t.Errorf("response = allowed %v, %d %q; want the Deny", resp.Allowed, resp.Result.Code, resp.Result.Message)
	}
	if got := strings.Join(calls, ","); got != "plain,temporary,ok,denied,permanent" {
		t.Errorf("calls = %s, want every validator once, in order", got)
	}
	if len(resp.Warnings) != 5 {
		t.Errorf("warnings = %v, want one per handler", resp.Warnings)
	}
}

func TestDenialRanksDenyThenPermanentThenTemporaryThenOther(t *testing.T) {
	plain := errors.New("plain")
	temporary := handlers.Temporary(errors.New("later"), 0)
	permanent := handlers.Permanent(errors.New("never"))
	deny := fmt.Errorf("wrapped: %w", handlers.Deny(400, "bad"))
	cases := []struct {
		errs    []error
		code    int32
		message string
	}{
		{[]error{plain}, 500, "plain"},
		{[]error{plain, temporary}, 500, "later"},
		{[]error{temporary, permanent, plain}, 500, "never"},
		{[]error{permanent, deny}, 400, "wrapped: bad"},
		{[]error{errors.New("first"), errors.New("second")}, 500, "first"},
	}
	for _, c := range cases {
		code, message := denial(c.errs)
		if code != c.code || message != c.message {
			t.Errorf("denial(%v) = %d %q, want %d %q", c.errs, code, message, c.code, c.message)
		}
	}
}

func TestAPanickingHandlerDeniesWithAnErrorAndTheOthersStillRun(t *testing.T) {
	reg := handlers.NewRegistry()
	ran := false
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		var m map[string]int
		m["boom"]++ //nolint:staticcheck // SA5000: a nil map, so the handler panics on purpose
		return nil
	}, handlers.ID("boom"))
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		ran = true
		return nil
	})
	resp := reviewerFor(t, reg, false).Handle(context.Background(), request(admissionv1.Create, configMap, ""))
	if resp.Allowed || resp.Result.Code != 500 || !strings.Contains(resp.Result.Message, `admission handler "boom" panicked`) {
		t.Errorf("response = allowed %v, %d %q", resp.Allowed, resp.Result.Code, resp.Result.Message)
	}
	if !ran {
		t.Error("the handler after the panicking one did not run")
	}
}

// patched applies a response's patch to the original object.
func patched(t *testing.T, original string, resp admission.Response) map[string]any {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(original), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Patches {
		applyOp(t, doc, p.Operation, p.Path, p.Value)
	}
	return doc
}

// applyOp applies one add/replace/remove operation (enough for these tests).
func applyOp(t *testing.T, doc map[string]any, op, path string, value any) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	m := doc
	for _, p := range parts[:len(parts)-1] {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("patch %s %s: no object at %s", op, path, p)
		}
		m = next
	}
	last := strings.ReplaceAll(strings.ReplaceAll(parts[len(parts)-1], "~1", "/"), "~0", "~")
	switch op {
	case "add", "replace":
		m[last] = value
	case "remove":
		delete(m, last)
	default:
		t.Fatalf("unexpected operation %s %s", op, path)
	}
}

func TestMutatorsRunInOrderSeeEarlierChangesAndKeepUnknownFields(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnMutate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		cm.Data["b"] = "2"
		delete(cm.Data, "a")
		return nil
	})
	handlers.OnMutate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		v := "saw b=" + cm.Data["b"]
		a.Patch.SetLabel("seen", nil)
		a.Patch.SetAnnotation("note", &v)
		return nil
	})
	handlers.OnMutate(reg, func(ctx context.Context, u *unstructured.Unstructured, a *handlers.Admission[*unstructured.Unstructured]) error {
		note := u.GetAnnotations()["note"]
		return unstructured.SetNestedField(u.Object, note, "data", "c")
	}, handlers.ForKind("", "v1", "ConfigMap"))

	resp := reviewerFor(t, reg, true).Handle(context.Background(), request(admissionv1.Create, configMap, ""))
	got := patched(t, configMap, resp)
	want := map[string]any{"b": "2", "c": "saw b=2"}
	if fmt.Sprint(got["data"]) != fmt.Sprint(want) {
		t.Errorf("data = %v, want %v", got["data"], want)
	}
	if fmt.Sprint(got["unknownToGo"]) != "map[keep:true]" {
		t.Errorf("a field the Go type does not know was lost: %v", got)
	}
	meta := got["metadata"].(map[string]any)
	if _, has := meta["creationTimestamp"]; has {
		t.Errorf("the patch added a field the handlers did not touch: %v", meta)
	}
	if fmt.Sprint(meta["labels"]) != "map[app:web]" {
		t.Errorf("labels = %v", meta["labels"])
	}
}

func TestAMutatorThatChangesNothingSendsNoPatch(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnMutate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error { return nil })
	resp := reviewerFor(t, reg, true).Handle(context.Background(), request(admissionv1.Update, configMap, configMap))
	if !resp.Allowed || len(resp.Patches) != 0 || resp.PatchType != nil {
		t.Errorf("response = %+v, want allowed without a patch", resp)
	}
}

func TestHandlersSkipOperationsAndObjectsTheyAreNotFor(t *testing.T) {
	reg := handlers.NewRegistry()
	called := 0
	deny := func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		called++
		return handlers.Deny(403, "no")
	}
	handlers.OnValidate(reg, deny, handlers.ID("other-app"), handlers.Labels{"app": "db"})
	handlers.OnValidate(reg, deny, handlers.ID("deletes"), handlers.Operations(admissionv1.Delete))
	handlers.OnValidate(reg, deny, handlers.ID("status"), handlers.SubResource("status"))
	resp := reviewerFor(t, reg, false).Handle(context.Background(), request(admissionv1.Create, configMap, ""))
	if !resp.Allowed || called != 0 {
		t.Errorf("allowed %v after %d calls, want allowed with no call", resp.Allowed, called)
	}
}

func TestOnDeleteTheHandlerGetsTheStoredObjectAsObjectAndOld(t *testing.T) {
	reg := handlers.NewRegistry()
	var name, oldName string
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		name, oldName = cm.Name, a.Old.Name
		return nil
	}, handlers.Operations(admissionv1.Delete))
	resp := reviewerFor(t, reg, false).Handle(context.Background(), request(admissionv1.Delete, "", configMap))
	if !resp.Allowed || name != "cm" || oldName != "cm" {
		t.Errorf("allowed %v, object %q, old %q", resp.Allowed, name, oldName)
	}
}

func TestDenialsCarryTheStatusReasonTheAPIServerWouldGive(t *testing.T) {
	for code, want := range map[int32]metav1.StatusReason{
		400: metav1.StatusReasonBadRequest,
		403: metav1.StatusReasonForbidden,
		404: metav1.StatusReasonNotFound,
		409: metav1.StatusReasonConflict,
		422: metav1.StatusReasonInvalid,
		429: metav1.StatusReasonTooManyRequests,
		500: metav1.StatusReasonInternalError,
		503: metav1.StatusReasonServiceUnavailable,
		418: metav1.StatusReasonUnknown,
	} {
		if got := deny(code, "no").Result.Reason; got != want {
			t.Errorf("a denial with code %d has reason %q, want %q", code, got, want)
		}
	}
}

func TestFieldAndValueFiltersSelectAdmissionRequestsAsInKopf(t *testing.T) {
	reg := handlers.NewRegistry()
	var calls []string
	add := func(id string, opts ...handlers.AdmissionOption) {
		handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
			calls = append(calls, id)
			return nil
		}, append(opts, handlers.ID(id))...)
	}
	add("has-a", handlers.Field("data.a"))
	add("has-missing", handlers.Field("data.missing"))
	add("a-is-1", handlers.Field("data.a"), handlers.Value("1"))
	add("a-is-2", handlers.Field("data.a"), handlers.Value("2"))
	add("missing-absent", handlers.Field("data.missing"), handlers.Value(handlers.Absent))
	add("label-as-keys", handlers.Field([]string{"metadata", "labels", "app"}), handlers.Value("web"))

	resp := reviewerFor(t, reg, false).Handle(context.Background(), request(admissionv1.Create, configMap, ""))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if got := strings.Join(calls, ","); got != "has-a,a-is-1,missing-absent,label-as-keys" {
		t.Errorf("calls = %s, want the handlers whose field filters match", got)
	}
}
