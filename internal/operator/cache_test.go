package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCacheOptionsWatchTheNamespacesAndDropManagedFieldsUnlessKept(t *testing.T) {
	co := CacheOptions([]string{"a", "b"}, false)
	if len(co.DefaultNamespaces) != 2 || co.DefaultNamespaces["a"].LabelSelector != nil {
		t.Errorf("namespaces a and b: %v", co.DefaultNamespaces)
	}
	if co.DefaultTransform == nil {
		t.Fatal("managedFields are kept by default")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	if _, err := co.DefaultTransform(cm); err != nil || cm.ManagedFields != nil {
		t.Errorf("the transform left managedFields: %v (%v)", cm.ManagedFields, err)
	}

	co = CacheOptions(nil, true)
	if co.DefaultNamespaces != nil || co.DefaultTransform != nil {
		t.Errorf("no namespaces and managedFields kept: %+v", co)
	}
}
