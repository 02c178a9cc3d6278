package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// embedded is a kind whose fields come partly from an embedded struct, as
// some hand-written types have: its status cannot be found by its fields
// alone.
type embedded struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	embeddedBody      `json:",inline"`
}

type embeddedBody struct {
	Status corev1.PodStatus `json:"status"`
}

func (e *embedded) DeepCopyObject() runtime.Object { c := *e; return &c }

// pointerStatus has its status behind a pointer.
type pointerStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            *corev1.PodStatus `json:"status,omitempty"`
}

func (p *pointerStatus) DeepCopyObject() runtime.Object { c := *p; return &c }

func TestStatusOfIsTheStatusTheWholeObjectConvertsTo(t *testing.T) {
	results := map[string]apiextensionsv1.JSON{
		"create_fn": {Raw: []byte(`{"message":"done","count":3,"ratio":0.5,"items":[1,"a",null]}`)},
		"gopf":      {Raw: []byte(`{"lastHandled":"{\"spec\":{}}"}`)},
	}
	podStatus := corev1.PodStatus{Phase: corev1.PodRunning, Message: "up",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	objects := map[string]client.Object{
		"typed with results":      &kopfv1.KopfExample{Status: kopfv1.KopfExampleStatus{Extra: results}},
		"typed without status":    &kopfv1.KopfExample{},
		"built-in with status":    &corev1.Pod{Status: podStatus},
		"built-in without status": &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
		"embedded status":         &embedded{embeddedBody: embeddedBody{Status: podStatus}},
		"status behind a pointer": &pointerStatus{Status: &podStatus},
		"nil status pointer":      &pointerStatus{},
		"unstructured": &unstructured.Unstructured{Object: map[string]any{
			"status": map[string]any{"create_fn": map[string]any{"count": int64(3)}},
		}},
	}
	for name, obj := range objects {
		t.Run(name, func(t *testing.T) {
			whole, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := whole["status"].(map[string]any)
			got, err := StatusOf(obj)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 && len(got) == 0 {
				return // absent and empty are the same to a timer
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("StatusOf = %#v, want %#v", got, want)
			}
		})
	}
}
