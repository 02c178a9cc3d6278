package decide

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestAFieldWithoutAValueSelectsTheObjectsThatHaveItExceptForChangesOfTheField(t *testing.T) {
	with := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "with"}, Data: map[string]string{"key": "v"}}
	without := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "without"}}
	present := spec.Present
	for _, tc := range []struct {
		kind           spec.Kind
		value          *spec.Filter
		selectsWithout bool
		selectsWith    bool
	}{
		{kind: spec.KindCreate, selectsWith: true},
		{kind: spec.KindResume, selectsWith: true},
		{kind: spec.KindDelete, selectsWith: true},
		{kind: spec.KindTimer, selectsWith: true},
		{kind: spec.KindDaemon, selectsWith: true},
		{kind: spec.KindEvent, selectsWith: true},
		{kind: spec.KindIndex, selectsWith: true},
		{kind: spec.KindReconcile, selectsWith: true},
		{kind: spec.KindUpdate, selectsWith: true, selectsWithout: true},
		{kind: spec.KindField, selectsWith: true, selectsWithout: true},
		{kind: spec.KindUpdate, value: &present, selectsWith: true},
	} {
		h := &contract.Handler{Kind: tc.kind, Options: spec.Options{Field: []string{"data", "key"}, Value: tc.value}}
		if got := Selects(h, with, nil, nil); got != tc.selectsWith {
			t.Errorf("%s handler (value %v) selects an object with the field: %v, want %v", tc.kind, tc.value, got, tc.selectsWith)
		}
		if got := Selects(h, without, nil, nil); got != tc.selectsWithout {
			t.Errorf("%s handler (value %v) selects an object without the field: %v, want %v", tc.kind, tc.value, got, tc.selectsWithout)
		}
	}
}
