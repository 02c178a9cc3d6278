package scenario

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestEveryKindHasItsWatchedFieldTypedAndUnstructured(t *testing.T) {
	for _, k := range Kinds {
		obj := k.Initial("ns", "a")
		if got := Field(obj); got != InitialField {
			t.Errorf("%s: Field of the typed object = %q, want %q", k.Name, got, InitialField)
		}
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: raw}
		u.SetGroupVersionKind(k.GVK)
		if got := Field(u); got != InitialField {
			t.Errorf("%s: Field of the unstructured object = %q, want %q", k.Name, got, InitialField)
		}
	}
}

func TestHandledReadsResultAnnotationsOnTypedStatusKinds(t *testing.T) {
	for _, k := range []Kind{Widget, Pod} {
		obj := k.Initial("ns", "a")
		if Handled(obj, 2, false) {
			t.Errorf("%s: a new object counts as created", k.Name)
		}
		obj.SetAnnotations(map[string]string{ResultAnnotation(CreateKey(0, 2)): CreatedValue})
		if Handled(obj, 2, false) {
			t.Errorf("%s: one create result of two counts as created", k.Name)
		}
		set := func(o client.Object, key, v string) {
			a := o.GetAnnotations()
			a[ResultAnnotation(key)] = v
			o.SetAnnotations(a)
		}
		set(obj, CreateKey(1, 2), CreatedValue)
		if !Handled(obj, 2, false) || Handled(obj, 2, true) {
			t.Errorf("%s: both create results: created %v, updated %v; want true, false", k.Name, Handled(obj, 2, false), Handled(obj, 2, true))
		}
		set(obj, UpdateKey(0, 2), UpdatedField)
		set(obj, UpdateKey(1, 2), InitialField)
		if Handled(obj, 2, true) {
			t.Errorf("%s: an update result for the old value counts as updated", k.Name)
		}
		set(obj, UpdateKey(1, 2), UpdatedField)
		if !Handled(obj, 2, true) {
			t.Errorf("%s: both update results for %q do not count as updated", k.Name, UpdatedField)
		}
	}
}

func TestKindFromEnv(t *testing.T) {
	t.Setenv(EnvKind, "")
	if k, err := KindFromEnv(); err != nil || k != KopfExample {
		t.Errorf("unset: %v, %v; want KopfExample", k.Name, err)
	}
	t.Setenv(EnvKind, "pod")
	if k, err := KindFromEnv(); err != nil || k != Pod {
		t.Errorf("pod: %v, %v; want Pod", k.Name, err)
	}
	t.Setenv(EnvKind, "namespace")
	if _, err := KindFromEnv(); err == nil {
		t.Error("an unknown kind was accepted")
	}
}
