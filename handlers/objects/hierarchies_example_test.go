package objects_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers/objects"
)

// exampleOwner is an owner as handlers receive it: stored, with its kind.
func exampleOwner() *corev1.ConfigMap {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "shop", Namespace: "prod", UID: "6f1c", Labels: map[string]string{"team": "web"},
	}}
	owner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return owner
}

func ExampleAdopt() {
	owner := exampleOwner()
	deployment := &appsv1.Deployment{}
	if err := objects.Adopt(owner, deployment); err != nil {
		fmt.Println(err)
		return
	}
	ref := metav1.GetControllerOf(deployment)
	fmt.Println(deployment.Namespace, deployment.GenerateName, deployment.Labels, deployment.Spec.Template.Labels)
	fmt.Println(ref.Kind, ref.Name, *ref.BlockOwnerDeletion)
	// Output:
	// prod shop- map[team:web] map[team:web]
	// ConfigMap shop true
}

func ExampleAdopt_strict() {
	// Strict names the child after its owner exactly; Nested() keeps the
	// labels off the pod template.
	deployment := &appsv1.Deployment{}
	if err := objects.Adopt(exampleOwner(), deployment, objects.Strict(), objects.Nested[string]()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(deployment.Name, deployment.Labels, deployment.Spec.Template.Labels)
	// Output: shop map[team:web] map[]
}

func ExampleAdoptAll() {
	service := &corev1.Service{}
	worker := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Worker",
		"spec": map[string]any{"pod": map[string]any{}},
	}}
	err := objects.AdoptAll(exampleOwner(), []client.Object{service, worker}, objects.Nested("spec.pod"))
	if err != nil {
		fmt.Println(err)
		return
	}
	podLabels, _, _ := unstructured.NestedStringMap(worker.Object, "spec", "pod", "metadata", "labels")
	fmt.Println(service.GenerateName, worker.GetGenerateName(), podLabels)
	// Output: shop- shop- map[team:web]
}

func ExampleAdopt_forced() {
	// Another controller's child is an error, unless Forced takes it over.
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cache"}}
	other := exampleOwner()
	other.Name, other.UID = "legacy", "91aa"
	_ = objects.Adopt(other, child)

	fmt.Println(objects.Adopt(exampleOwner(), child))
	if err := objects.Adopt(exampleOwner(), child, objects.Forced()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(child.GenerateName, metav1.GetControllerOf(child).Name, len(child.OwnerReferences))
	// Output:
	// adopt: cache: already controlled by ConfigMap legacy (Forced takes it over)
	// shop- shop 2
}

func ExampleLabel() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "own"}}}
	_ = objects.Label(pod, map[string]string{"app": "shop", "team": "web"})
	fmt.Println(pod.Labels)
	_ = objects.Label(pod, map[string]string{"app": "shop"}, objects.Forced())
	fmt.Println(pod.Labels)
	// Output:
	// map[app:own team:web]
	// map[app:shop team:web]
}

func ExampleHarmonizeNaming() {
	pod := &corev1.Pod{}
	_ = objects.HarmonizeNaming(pod, "shop")
	fmt.Printf("name %q, generateName %q\n", pod.Name, pod.GenerateName)
	_ = objects.HarmonizeNaming(pod, "shop", objects.Strict(), objects.Forced())
	fmt.Printf("name %q, generateName %q\n", pod.Name, pod.GenerateName)
	// Output:
	// name "", generateName "shop-"
	// name "shop", generateName ""
}

func ExampleAdjustNamespace() {
	pod := &corev1.Pod{}
	objects.AdjustNamespace(pod, "prod")
	objects.AdjustNamespace(pod, "dev") // kept: the pod has one
	fmt.Println(pod.Namespace)
	// Output: prod
}

func ExampleAppendOwnerReference() {
	pod := &corev1.Pod{}
	// A plain owner: the pod goes with the owner, and can have a controller.
	if err := objects.AppendOwnerReference(exampleOwner(), pod, objects.NotController()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pod.OwnerReferences[0].Name, metav1.GetControllerOf(pod) == nil)
	// Output: shop true
}

func ExampleRemoveOwnerReference() {
	owner := exampleOwner()
	pod := &corev1.Pod{}
	_ = objects.AppendOwnerReference(owner, pod)
	_ = objects.RemoveOwnerReference(owner, pod) // the pod now outlives its owner
	fmt.Println(len(pod.OwnerReferences))
	// Output: 0
}

func ExampleOwnerReference() {
	ref, err := objects.OwnerReference(exampleOwner())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ref.APIVersion, ref.Kind, ref.Name, ref.UID, *ref.Controller, *ref.BlockOwnerDeletion)
	// Output: v1 ConfigMap shop 6f1c true true
}

func ExampleObjectReference() {
	ref := objects.ObjectReference(exampleOwner())
	fmt.Println(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, ref.UID)
	// Output: v1 ConfigMap prod shop 6f1c
}
