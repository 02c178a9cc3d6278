package objects_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// TestTheAPIServerAcceptsAdoptedChildrenAndRefusesKopfsSecondController
// creates children adopted with the helpers on a real API server: a typed
// workload, an unstructured object, and one taken over from another
// controller with Forced. What the server stores ties each child to its
// owner. A child with two controller references, which Kopf's adopt makes
// of another controller's child, is refused, which is why Adopt reports it.
func TestTheAPIServerAcceptsAdoptedChildrenAndRefusesKopfsSecondController(t *testing.T) {
	cp, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	k8s, err := client.New(cp.Config, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", Labels: map[string]string{"team": "web"}}}
	legacy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default"}}
	for _, o := range []*corev1.ConfigMap{owner, legacy} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap")) // as gopf hands owners to handlers
	}

	deployment := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		},
	}}
	settings := &unstructured.Unstructured{}
	settings.SetAPIVersion("v1")
	settings.SetKind("ConfigMap")
	if err := objects.AdoptAll(owner, []client.Object{deployment, settings}); err != nil {
		t.Fatal(err)
	}
	taken := &corev1.Secret{}
	if err := objects.Adopt(legacy, taken, objects.Strict()); err != nil {
		t.Fatal(err)
	}
	if err := objects.Adopt(owner, taken, objects.Forced()); err != nil {
		t.Fatal(err)
	}
	for _, child := range []client.Object{deployment, settings, taken} {
		if err := k8s.Create(ctx, child); err != nil {
			t.Fatalf("creating %T: %v", child, err)
		}
		stored := child.DeepCopyObject().(client.Object)
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(child), stored); err != nil {
			t.Fatal(err)
		}
		ctrl := metav1.GetControllerOf(stored)
		if ctrl == nil || ctrl.UID != owner.UID || ctrl.Kind != "ConfigMap" || ctrl.APIVersion != "v1" || !*ctrl.BlockOwnerDeletion {
			t.Errorf("%s: controller %+v", stored.GetName(), ctrl)
		}
		if !strings.HasPrefix(stored.GetName(), "shop-") || stored.GetLabels()["team"] != "web" {
			t.Errorf("%s: name or labels %v", stored.GetName(), stored.GetLabels())
		}
	}
	if got := deployment.Spec.Template.Labels; got["team"] != "web" || got["app"] != "shop" {
		t.Errorf("stored pod template labels = %v", got)
	}
	if refs := taken.OwnerReferences; len(refs) != 2 || refs[0].UID != legacy.UID {
		t.Errorf("the taken-over child's references = %+v: the old controller stays as a plain owner", refs)
	}

	// What Kopf's adopt makes of a child another owner controls.
	ownerRef, err := objects.OwnerReference(owner)
	if err != nil {
		t.Fatal(err)
	}
	legacyRef, err := objects.OwnerReference(legacy)
	if err != nil {
		t.Fatal(err)
	}
	twice := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "twice-", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{legacyRef, ownerRef}}}
	if err := k8s.Create(ctx, twice); err == nil || !strings.Contains(err.Error(), "Only one reference can have Controller set to true") {
		t.Errorf("two controller references: %v", err)
	}
}
