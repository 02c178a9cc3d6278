package handlers

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Adopt makes child belong to owner, the way Kopf's adopt does, before the
// child is created:
//
//   - a controller owner reference to owner (blocking the owner's deletion
//     until the child is gone), so the garbage collector removes the child
//     with its owner;
//   - the owner's namespace, if the child has none and the owner has one;
//   - a name prefix "<owner name>-" (generateName), if the child has neither
//     a name nor a generateName;
//   - the owner's labels, where the child does not set them itself, on the
//     child and on the pod templates inside it (spec.template and
//     spec.jobTemplate.spec.template, as in Deployments, StatefulSets,
//     DaemonSets, Jobs and CronJobs).
//
// Where the API server enforces blockOwnerDeletion
// (OwnerReferencesPermissionEnforcement), creating the child needs update
// on the owner's <resource>/finalizers: declare the creation on the
// handler with Uses(child, "create"), and --print-rbac grants both.
//
// The owner needs its apiVersion and kind: objects gopf hands to handlers
// carry them. child may be typed or unstructured. Adopt fails if the child
// already has a different controller.
func Adopt(owner, child client.Object) error {
	gvk := owner.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return errors.New("adopt: the owner has no apiVersion/kind set")
	}
	if owner.GetName() == "" || owner.GetUID() == "" {
		return errors.New("adopt: the owner has no name or uid (is it stored yet?)")
	}
	ref := metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptrTrue(),
		BlockOwnerDeletion: ptrTrue(),
	}
	refs := child.GetOwnerReferences()
	replaced := false
	for i, r := range refs {
		switch {
		case r.UID == owner.GetUID():
			refs[i], replaced = ref, true
		case r.Controller != nil && *r.Controller:
			return fmt.Errorf("adopt: %s is already controlled by %s %s", child.GetName(), r.Kind, r.Name)
		}
	}
	if !replaced {
		refs = append(refs, ref)
	}
	child.SetOwnerReferences(refs)
	if child.GetNamespace() == "" && owner.GetNamespace() != "" {
		child.SetNamespace(owner.GetNamespace())
	}
	if child.GetName() == "" && child.GetGenerateName() == "" {
		child.SetGenerateName(owner.GetName() + "-")
	}
	labels := owner.GetLabels()
	if len(labels) == 0 {
		return nil
	}
	child.SetLabels(withDefaults(child.GetLabels(), labels))
	return labelTemplates(child, labels)
}

// labelTemplates adds labels to the pod templates inside a workload.
func labelTemplates(child client.Object, labels map[string]string) error {
	u, isUnstructured := child.(*unstructured.Unstructured)
	var content map[string]any
	if isUnstructured {
		content = u.Object
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(child); err != nil {
			return fmt.Errorf("adopt: %w", err)
		}
	}
	changed := false
	for _, path := range [][]string{
		{"spec", "template", "metadata", "labels"},
		{"spec", "jobTemplate", "spec", "template", "metadata", "labels"},
	} {
		parent := path[:len(path)-2] // the template itself
		if _, found, _ := unstructured.NestedMap(content, parent...); !found {
			continue
		}
		existing, _, _ := unstructured.NestedStringMap(content, path...)
		if err := unstructured.SetNestedStringMap(content, withDefaults(existing, labels), path...); err != nil {
			return fmt.Errorf("adopt: %w", err)
		}
		changed = true
	}
	if changed && !isUnstructured {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, child); err != nil {
			return fmt.Errorf("adopt: %w", err)
		}
	}
	return nil
}

// withDefaults returns m with the entries of defaults it lacks.
func withDefaults(m, defaults map[string]string) map[string]string {
	out := make(map[string]string, len(m)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptrTrue() *bool { t := true; return &t }
