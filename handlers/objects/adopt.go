package objects

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podTemplates are where Adopt puts the owner's labels inside a child
// unless Nested says otherwise: the pod templates of Deployments,
// ReplicaSets, StatefulSets, DaemonSets and Jobs, and of CronJobs.
var podTemplates = [][]string{
	{"spec", "template"},
	{"spec", "jobTemplate", "spec", "template"},
}

// Adopt makes child belong to owner, the way Kopf's adopt does, before the
// child is created:
//
//   - a controller owner reference to owner (blocking the owner's deletion
//     until the child is gone), so the garbage collector removes the child
//     with its owner (AppendOwnerReference);
//   - the owner's namespace, if the child has none and the owner has one
//     (AdjustNamespace);
//   - a name prefix "<owner name>-" (generateName), or with Strict the
//     owner's name itself, if the child has neither a name nor a
//     generateName (HarmonizeNaming);
//   - the owner's labels, where the child does not set them itself, on the
//     child and on the objects at the Nested paths inside it (Label).
//
// Forced overwrites what the child already has: its name, namespace and
// labels, and another owner's controller reference (which stays as a plain
// owner reference). Without Forced, a child controlled by another owner is
// an error, where Kopf adds a second controller reference that the API
// server then refuses.
//
// Unlike Kopf's, Adopt labels the pod templates inside workloads
// (spec.template and spec.jobTemplate.spec.template) unless Nested names
// other paths: the pods are what selectors, network policies and cost
// reports look at, and a Kopf port almost always passes
// nested="spec.template". Kopf's namespace adjustment with forced=True
// clears a child's namespace when the owner is cluster-scoped; Adopt keeps
// it, as a namespaced child cannot be created without one.
//
// Where the API server enforces blockOwnerDeletion
// (OwnerReferencesPermissionEnforcement), creating the child needs update
// on the owner's <resource>/finalizers: declare the creation on the
// handler with handlers.Uses(child, "create"), and --print-rbac grants
// both.
//
// The owner needs its apiVersion and kind: objects gopf hands to handlers
// carry them. child may be typed or unstructured. When Adopt fails, the
// child is left unchanged.
func Adopt(owner, child client.Object, opts ...AdoptOption) error {
	return AdoptAll(owner, []client.Object{child}, opts...)
}

// AdoptAll is Adopt for several children (Kopf's adopt of a list): typed
// ones, unstructured ones, or client.Objects of both. Either all of them are
// adopted or, with an error naming the first child that cannot be, none is
// changed.
func AdoptAll[O client.Object](owner client.Object, children []O, opts ...AdoptOption) error {
	d, err := childOptions(opts)
	if err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	if !d.nestedSet {
		d.nested = podTemplates
	}
	ref, err := ownerReference(owner, d)
	if err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	which := func(i int, child client.Object) string {
		if len(children) == 1 {
			return describe(child)
		}
		return fmt.Sprintf("children[%d] (%s)", i, describe(child))
	}
	for i, child := range children {
		if v := reflect.ValueOf(child); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("adopt: children[%d] is nil", i)
		}
		// A trial on a copy first, so that a failure changes nothing.
		if err := adopt(owner, child.DeepCopyObject().(client.Object), ref, d); err != nil {
			return fmt.Errorf("adopt: %s: %w", which(i, child), err)
		}
	}
	for i, child := range children {
		if err := adopt(owner, child, ref, d); err != nil {
			return fmt.Errorf("adopt: %s: %w", which(i, child), err)
		}
	}
	return nil
}

// adopt is Adopt for one child and a ready owner reference.
func adopt(owner, child client.Object, ref metav1.OwnerReference, d *childDraft) error {
	if err := appendOwnerReference(child, ref, d.forced); err != nil {
		return err
	}
	harmonizeNaming(child, owner.GetName(), d.strict, d.forced)
	if ns := owner.GetNamespace(); ns != "" && (d.forced || child.GetNamespace() == "") {
		child.SetNamespace(ns)
	}
	return label(child, owner.GetLabels(), d.nested, d.forced)
}

func ptrTrue() *bool { t := true; return &t }
