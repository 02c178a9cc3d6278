package handlers_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func allowPod(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error {
	return nil
}

func onlyAdmission(t *testing.T, r *handlers.Registry) *spec.Handler[*handlers.Cause] {
	t.Helper()
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	hs := handlers.HandlersOf(r, spec.KindValidate, spec.KindMutate)
	if len(hs) != 1 {
		t.Fatalf("got %d admission handlers, want 1", len(hs))
	}
	return hs[0]
}

// Which requests an admission handler is called for is the webhook
// engine's decision (package webhook matches Operations and SubResource);
// these tests pin the resolved options it decides from.

func TestAdmissionHandlersRunForCreateAndUpdateOfTheObjectItselfByDefault(t *testing.T) {
	for _, register := range []func(*handlers.Registry){
		func(r *handlers.Registry) { handlers.OnValidate(r, allowPod) },
		func(r *handlers.Registry) { handlers.OnMutate(r, allowPod) },
	} {
		r := handlers.NewRegistry()
		register(r)
		h := onlyAdmission(t, r)
		if got := strings.Join(h.Options.Operations, ","); got != "CREATE,UPDATE" {
			t.Errorf("%s: operations = %s, want CREATE,UPDATE", h.Kind, got)
		}
		if h.Options.SubResource != "" {
			t.Errorf("%s: subresource = %q without asking for one, want the object itself (\"\")", h.Kind, h.Options.SubResource)
		}
	}
}

func TestAMutatingHandlerRunsForDeleteOnlyWhenAsked(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnMutate(r, allowPod, handlers.Operations(admissionv1.Delete))
	if got := onlyAdmission(t, r).Options.Operations; strings.Join(got, ",") != "DELETE" {
		t.Errorf("operations = %v, want DELETE only", got)
	}
}

func TestSubResourceStarIsKeptForTheObjectAndEverySubresource(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.SubResource("*"))
	if got := onlyAdmission(t, r).Options.SubResource; got != "*" {
		t.Errorf("subresource = %q, want *", got)
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
		"number":   3,
	})
	got := spec.ObjectSelector(onlyAdmission(t, r).Options.Labels)
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
	if got := spec.ObjectSelector(onlyAdmission(t, r).Options.Labels); got != nil {
		t.Errorf("selector = %v, want nil", got)
	}
}

func TestAdmissionFiltersSelectByLabelsAnnotationsAndWhen(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod,
		handlers.Labels{"app": "web", "team": func(v string) bool { return strings.HasPrefix(v, "a") }},
		handlers.Annotations{"check": handlers.Present},
		handlers.When(func(p *corev1.Pod, _ *handlers.Cause) bool { return p.Name != "skip" }),
	)
	o := onlyAdmission(t, r).Options
	selects := func(obj *corev1.Pod) bool { // as the webhook engine applies the filters
		return spec.MatchMetadata(o.Labels, obj.GetLabels()) && spec.MatchMetadata(o.Annotations, obj.GetAnnotations()) && o.When(obj, nil)
	}
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
		if got := selects(c.pod); got != c.want {
			t.Errorf("%s: selected = %v, want %v", name, got, c.want)
		}
	}
}

func TestBadAdmissionOptionValuesAreReported(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnValidate(r, allowPod, handlers.Operations("PATCH"), handlers.WebhookTimeout(45*time.Second), handlers.SubResource("Not/Valid"))
	handlers.OnMutate(r, allowPod, handlers.Operations(), handlers.WebhookTimeout(500*time.Millisecond))
	err := r.Err()
	for _, want := range []string{
		`unknown operation "PATCH"`, "WebhookTimeout 45s", `subresource "Not/Valid"`, "needs at least one operation", "WebhookTimeout 500ms",
	} {
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
	for _, h := range handlers.HandlersOf(r, spec.KindValidate, spec.KindMutate) {
		ids = append(ids, h.Options.ID)
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
	handlers.OnMutate(r, allowPod)
	for _, h := range handlers.HandlersOf(r) {
		if !h.Kind.Admission() || h.Kind.Reason() != "" {
			t.Errorf("%s is taken for a change handler", h)
		}
	}
	if n := len(handlers.HandlersOf(r, spec.KindCreate, spec.KindUpdate, spec.KindField, spec.KindDelete, spec.KindResume)); n != 0 {
		t.Errorf("%d change handlers, want none", n)
	}
}

func TestCallHandsTheHandlerTypedObjectsAndCollectsWarnings(t *testing.T) {
	r := handlers.NewRegistry()
	var sawOld string
	var sawOp admissionv1.Operation
	handlers.OnValidate(r, func(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error {
		sawOld, sawOp = a.Old.Name, a.Operation
		a.Warn("careful")
		return handlers.Deny(422, "no "+pod.Name)
	})
	h := onlyAdmission(t, r)
	review := handlers.CallFor(admissionv1.Update)
	err := h.Review(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, review)
	var denied *spec.AdmissionError
	if !errors.As(err, &denied) || denied.StatusCode() != 422 || denied.Message != "no new" {
		t.Errorf("err = %#v", err)
	}
	if sawOld != "old" || sawOp != admissionv1.Update || strings.Join(review.Warnings, ",") != "careful" {
		t.Errorf("old = %q, operation = %q, warnings = %v", sawOld, sawOp, review.Warnings)
	}
	if err := h.Review(context.Background(), &corev1.ConfigMap{}, nil, handlers.CallFor(admissionv1.Create)); err == nil {
		t.Error("Review with the wrong type did not fail")
	}
	if got := handlers.Deny(0, "x").(*spec.AdmissionError).StatusCode(); got != 403 {
		t.Errorf("default code = %d, want 403", got)
	}
}
