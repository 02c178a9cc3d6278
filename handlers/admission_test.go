package handlers_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
)

func allowPod(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error {
	return nil
}

func onlyAdmission(t *testing.T, r *handlers.Registry) *handlers.AdmissionRegistration {
	t.Helper()
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	regs := r.AdmissionRegistrations()
	if len(regs) != 1 {
		t.Fatalf("got %d admission registrations, want 1", len(regs))
	}
	return regs[0]
}

func TestAdmissionHandlersRunForCreateAndUpdateByDefault(t *testing.T) {
	for _, register := range []func(*handlers.Registry){
		func(r *handlers.Registry) { handlers.OnValidate(r, allowPod) },
		func(r *handlers.Registry) { handlers.OnMutate(r, allowPod) },
	} {
		r := handlers.NewRegistry()
		register(r)
		reg := onlyAdmission(t, r)
		for op, want := range map[handlers.Operation]bool{
			handlers.OperationCreate: true, handlers.OperationUpdate: true,
			handlers.OperationDelete: false, handlers.OperationConnect: false,
		} {
			if got := reg.Handles(op, ""); got != want {
				t.Errorf("%s: Handles(%s) = %v, want %v", reg.HandlerKind(), op, got, want)
			}
		}
		if reg.Handles(handlers.OperationCreate, "status") {
			t.Errorf("%s: handles the status subresource without asking for it", reg.HandlerKind())
		}
	}
}

func TestAMutatingHandlerRunsForDeleteOnlyWhenAsked(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnMutate(r, allowPod, handlers.Operations(handlers.OperationDelete))
	reg := onlyAdmission(t, r)
	if !reg.Handles(handlers.OperationDelete, "") || reg.Handles(handlers.OperationCreate, "") {
		t.Errorf("operations = %v, want DELETE only", reg.Admission.Operations)
	}
}

func TestSubResourceStarMeansTheObjectAndEverySubresource(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.SubResource("*"))
	reg := onlyAdmission(t, r)
	for _, sub := range []string{"", "status", "exec"} {
		if !reg.Handles(handlers.OperationCreate, sub) {
			t.Errorf("does not handle subresource %q", sub)
		}
	}
}

func TestLabelFiltersBecomeAnObjectSelectorWhereTheyCan(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.Labels{
		"app":      "web",
		"tier":     handlers.Present,
		"legacy":   handlers.Absent,
		"computed": func(v string) bool { return v != "" },
		"weird":    "not a label value!",
		"number":   handlers.Equal(3),
	})
	got := onlyAdmission(t, r).ObjectSelector()
	want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}},
		{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
		{Key: "tier", Operator: metav1.LabelSelectorOpExists},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("selector = %v, want %v", got, want)
	}
}

func TestNoLabelFiltersMeanNoObjectSelector(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.Labels{"computed": func(string) bool { return true }})
	if got := onlyAdmission(t, r).ObjectSelector(); got != nil {
		t.Errorf("selector = %v, want nil", got)
	}
}

func TestSelectsAppliesLabelsAnnotationsAndWhen(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod,
		handlers.Labels{"app": "web", "team": func(v string) bool { return strings.HasPrefix(v, "a") }},
		handlers.Annotations{"check": handlers.Present},
		handlers.When(func(p *corev1.Pod) bool { return p.Name != "skip" }),
	)
	reg := onlyAdmission(t, r)
	pod := func(name string, labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	}
	good := map[string]string{"app": "web", "team": "alpha"}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"all match":          {pod("p", good, map[string]string{"check": ""}), true},
		"label function":     {pod("p", map[string]string{"app": "web", "team": "beta"}, map[string]string{"check": ""}), false},
		"annotation missing": {pod("p", good, nil), false},
		"when says no":       {pod("skip", good, map[string]string{"check": ""}), false},
	}
	for name, c := range cases {
		if got := reg.Selects(c.pod); got != c.want {
			t.Errorf("%s: Selects = %v, want %v", name, got, c.want)
		}
	}
}

func TestAdmissionOptionsOnOtherHandlersAreBadRegistrations(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, createFn, handlers.Persistent())
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "only for OnValidate and OnMutate") || !strings.Contains(err.Error(), "admission_test.go:") {
		t.Errorf("err = %v, want a complaint naming the place", err)
	}
}

func TestOptionsOfOtherHandlerKindsAreBadAdmissionRegistrations(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.Retries(3), handlers.Field("spec.x"))
	err := r.Err()
	for _, want := range []string{"Field", "Retries", "are not for admission handlers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %s", err, want)
		}
	}
	if len(r.AdmissionRegistrations()) != 0 {
		t.Error("a bad registration was kept")
	}
}

func TestBadAdmissionOptionValuesAreReported(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.Operations("PATCH"), handlers.WebhookTimeout(45*time.Second), handlers.SubResource("Not/Valid"))
	handlers.OnMutate(r, allowPod, handlers.Operations(), handlers.AdmissionOptions{Timeout: 500 * time.Millisecond})
	err := r.Err()
	for _, want := range []string{`unknown operation "PATCH"`, "WebhookTimeout 45s", `subresource "Not/Valid"`, "needs at least one operation", "WebhookTimeout 500ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %s", err, want)
		}
	}
}

func TestAnUnstructuredAdmissionHandlerNeedsAKind(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, func(ctx context.Context, obj *unstructured.Unstructured, a *handlers.Admission[*unstructured.Unstructured]) error {
		return nil
	})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "needs ForKind or ForResource") {
		t.Errorf("err = %v", err)
	}
}

func TestAdmissionIDsDefaultPerHandlerKindAndMustBeUnique(t *testing.T) {
	r := handlers.NewRegistry()
	literal := func(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error { return nil }
	handlers.OnValidate(r, allowPod)
	handlers.OnValidate(r, literal)
	handlers.OnValidate(r, func(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error { return nil })
	handlers.OnMutate(r, literal)
	handlers.OnMutate(r, allowPod) // same id as the validator: fine, another configuration
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, reg := range r.AdmissionRegistrations() {
		ids = append(ids, reg.Options.ID)
	}
	if got, want := strings.Join(ids, ","), "allowPod,validate_fn,validate_fn_2,mutate_fn,allowPod"; got != want {
		t.Errorf("ids = %s, want %s", got, want)
	}
	handlers.OnValidate(r, allowPod)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `id "allowPod" is already used`) {
		t.Errorf("err = %v, want a duplicate id", err)
	}
}

func TestAdmissionHandlersAreNotChangeHandlers(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod)
	if n := len(r.Registrations()); n != 0 {
		t.Errorf("Registrations() has %d entries, want none", n)
	}
}

func TestCallHandsTheHandlerTypedObjectsAndCollectsWarnings(t *testing.T) {
	r := handlers.NewRegistry()
	var sawOld string
	handlers.OnValidate(r, func(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error {
		sawOld = a.Old.Name
		a.Warn("careful")
		return handlers.Deny(422, "no "+pod.Name)
	})
	reg := onlyAdmission(t, r)
	req := &handlers.AdmissionRequest{Operation: handlers.OperationUpdate}
	err := reg.Call(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, req)
	var denied *handlers.AdmissionError
	if !errors.As(err, &denied) || denied.StatusCode() != 422 || denied.Message != "no new" {
		t.Errorf("err = %#v", err)
	}
	if sawOld != "old" || strings.Join(req.Warnings(), ",") != "careful" {
		t.Errorf("old = %q, warnings = %v", sawOld, req.Warnings())
	}
	if got := (&handlers.AdmissionError{Message: "x"}).StatusCode(); got != 403 {
		t.Errorf("default code = %d, want 403", got)
	}
}
