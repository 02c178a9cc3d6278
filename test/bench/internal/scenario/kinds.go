package scenario

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/kinds"
)

// EnvKind names the environment variable that tells an operator which kind
// it handles: the Name of one of Kinds (KopfExample when unset).
const EnvKind = "GOPF_BENCH_KIND"

// Kind is a kind of object the benchmark can run its workload on.
//
// KopfExample keeps unknown status fields, so every operator stores its
// results there. The other kinds cannot hold them (a typed status prunes
// or drops unknown fields): their handlers record results in annotations
// (ResultAnnotation), and the field the update phase changes is a spec
// field of the kind.
type Kind struct {
	// Name identifies the kind in EnvKind and in scenario names.
	Name string
	// GVK is its group, version and kind.
	GVK schema.GroupVersionKind
	// Resource is its plural resource name, as the audit log names it.
	Resource string
	// FieldPath is the spec field the update phase changes, for messages.
	FieldPath string
}

// The kinds.
var (
	// KopfExample is Kopf's example kind: its status keeps unknown fields.
	KopfExample = Kind{Name: "kopfexample", GVK: kopfv1.GroupVersion.WithKind("KopfExample"), Resource: "kopfexamples", FieldPath: "spec.field"}
	// Widget is a custom resource of kubebuilder's shape: a status
	// subresource and a typed status whose undeclared fields the API
	// server prunes (package test/kinds).
	Widget = Kind{Name: "widget", GVK: kinds.GroupVersion.WithKind("Widget"), Resource: "widgets", FieldPath: "spec.color"}
	// Pod is a built-in kind with a status subresource and a typed status.
	// With no scheduler, a Pod stays Pending, and a deleted one goes at
	// once when its finalizers are gone.
	Pod = Kind{Name: "pod", GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: "pods", FieldPath: "spec.containers[0].image"}

	// Kinds are all of them.
	Kinds = []Kind{KopfExample, Widget, Pod}
)

// KindFromEnv returns the kind EnvKind names: KopfExample when unset, an
// error when it names none.
func KindFromEnv() (Kind, error) {
	v := os.Getenv(EnvKind)
	if v == "" {
		return KopfExample, nil
	}
	for _, k := range Kinds {
		if k.Name == v {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("%s=%q: want kopfexample, widget or pod", EnvKind, v)
}

// New returns an empty object of the kind, named; namespace and name may
// be empty.
func (k Kind) New(namespace, name string) client.Object {
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name}
	switch k.Name {
	case Widget.Name:
		return &kinds.Widget{ObjectMeta: meta}
	case Pod.Name:
		return &corev1.Pod{ObjectMeta: meta}
	default:
		return &kopfv1.KopfExample{ObjectMeta: meta}
	}
}

// Initial returns the object the load generator creates: the watched field
// set to InitialField.
func (k Kind) Initial(namespace, name string) client.Object {
	obj := k.New(namespace, name)
	switch o := obj.(type) {
	case *kinds.Widget:
		o.Spec = kinds.WidgetSpec{Size: 1, Color: InitialField}
	case *corev1.Pod:
		o.Spec.Containers = []corev1.Container{{Name: "main", Image: InitialField}}
	case *kopfv1.KopfExample:
		o.Spec = kopfv1.KopfExampleSpec{Field: InitialField, Duration: "1m", Items: []string{"item1", "item2"}}
	}
	return obj
}

// UpdatePatch is the merge patch that sets the watched field to
// UpdatedField. A Pod's container list is replaced whole, by a strategic
// merge patch keyed by the container's name.
func (k Kind) UpdatePatch() client.Patch {
	switch k.Name {
	case Widget.Name:
		return client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"color":"`+UpdatedField+`"}}`))
	case Pod.Name:
		return client.RawPatch("application/strategic-merge-patch+json", []byte(`{"spec":{"containers":[{"name":"main","image":"`+UpdatedField+`"}]}}`))
	default:
		return client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"`+UpdatedField+`"}}`))
	}
}

// Field returns the watched field of obj, typed or unstructured.
func Field(obj client.Object) string {
	switch o := obj.(type) {
	case *kinds.Widget:
		return o.Spec.Color
	case *corev1.Pod:
		if len(o.Spec.Containers) > 0 {
			return o.Spec.Containers[0].Image
		}
	case *kopfv1.KopfExample:
		return o.Spec.Field
	case *unstructured.Unstructured:
		switch o.GetKind() {
		case Widget.GVK.Kind:
			s, _, _ := unstructured.NestedString(o.Object, "spec", "color")
			return s
		case Pod.GVK.Kind:
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
			if len(containers) > 0 {
				c, _ := containers[0].(map[string]any)
				s, _ := c["image"].(string)
				return s
			}
		default:
			s, _, _ := unstructured.NestedString(o.Object, "spec", "field")
			return s
		}
	}
	return ""
}

// ResultAnnotation is the annotation under which a handler of a kind other
// than KopfExample records its result: bench.gopf.dev/<key>, key being a
// CreateKey or UpdateKey. A create handler records "created", an update
// handler the new value of the watched field.
func ResultAnnotation(key string) string { return "bench.gopf.dev/" + key }

// CreatedValue is the value a create handler records in its annotation.
const CreatedValue = "created"

// Handled reports whether all n create results (updated false) or all n
// update results for UpdatedField (updated true) are on obj, which the
// load generator reads as a typed object.
func Handled(obj client.Object, n int, updated bool) bool {
	if kex, ok := obj.(*kopfv1.KopfExample); ok {
		if updated {
			return Updated(kex, n)
		}
		return Created(kex, n)
	}
	for i := range n {
		key, want := CreateKey(i, n), CreatedValue
		if updated {
			key, want = UpdateKey(i, n), UpdatedField
		}
		if obj.GetAnnotations()[ResultAnnotation(key)] != want {
			return false
		}
	}
	return true
}
