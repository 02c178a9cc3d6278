package objects

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The helpers of this file are Kopf's building blocks of adopt (its
// kopf/_kits/hierarchies.py), for children that need only some of what
// Adopt does. They change the object in memory, before it is created;
// nothing is sent to the API server. Each takes the object it changes
// (typed or unstructured) explicitly, where Kopf guesses the owner from the
// handler being run.

// Label gives child the labels, where it does not set them itself (or
// overwriting its own with Forced), and, with Nested, the same labels to
// the objects at those paths inside it (pod templates).
func Label(child client.Object, labels map[string]string, opts ...LabelOption) error {
	d, err := childOptions(opts)
	if err != nil {
		return fmt.Errorf("label: %w", err)
	}
	if err := label(child, labels, d.nested, d.forced); err != nil {
		return fmt.Errorf("label: %w", err)
	}
	return nil
}

// HarmonizeNaming names child after name: it gets the generateName
// "<name>-" (the API server adds a random suffix; read the name from the
// created object), or exactly name with Strict. A child that already has a
// name or a generateName keeps it, unless Forced. The name must not be
// empty.
func HarmonizeNaming(child client.Object, name string, opts ...NamingOption) error {
	d, err := childOptions(opts)
	if err != nil {
		return fmt.Errorf("harmonize naming: %w", err)
	}
	if name == "" {
		return errors.New("harmonize naming: the name is empty")
	}
	harmonizeNaming(child, name, d.strict, d.forced)
	return nil
}

// AdjustNamespace puts child into namespace, unless it already has one
// (or with Forced, always: Forced with "" clears the child's namespace).
func AdjustNamespace(child client.Object, namespace string, opts ...NamespaceOption) {
	d, _ := childOptions(opts) // none of the namespace options can be bad
	if d.forced || child.GetNamespace() == "" {
		child.SetNamespace(namespace)
	}
}

// AppendOwnerReference adds an owner reference to owner (see
// OwnerReference: a controller reference that blocks the owner's deletion,
// unless NotController or NoBlockOwnerDeletion) to child. A reference to the
// same owner (by uid) is replaced, so that the flags are as asked; Kopf keeps
// the old one. A controller reference to a child that another owner
// controls is an error, unless Forced.
func AppendOwnerReference(owner, child client.Object, opts ...AppendOption) error {
	d, err := childOptions(opts)
	if err != nil {
		return fmt.Errorf("append owner reference: %w", err)
	}
	ref, err := ownerReference(owner, d)
	if err != nil {
		return fmt.Errorf("append owner reference: %w", err)
	}
	if err := appendOwnerReference(child, ref, d.forced); err != nil {
		return fmt.Errorf("append owner reference: %s: %w", describe(child), err)
	}
	return nil
}

// RemoveOwnerReference removes child's owner references to owner (by uid),
// if it has any: the child no longer belongs to owner, and outlives it
// unless another owner remains. Update the stored child afterwards.
func RemoveOwnerReference(owner, child client.Object) error {
	if owner.GetUID() == "" {
		return errors.New("remove owner reference: the owner has no uid (is it stored yet?)")
	}
	child.SetOwnerReferences(slices.DeleteFunc(slices.Clone(child.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
		return r.UID == owner.GetUID()
	}))
	return nil
}

// OwnerReference builds the owner reference to owner that Kopf's
// build_owner_reference builds: apiVersion, kind, name and uid, a
// controller reference that blocks the owner's deletion, unless
// NotController or NoBlockOwnerDeletion. Where Kopf leaves out fields the
// owner lacks (and the API server then refuses the child), missing ones
// are an error: objects gopf hands to handlers carry them all once stored.
func OwnerReference(owner client.Object, opts ...OwnerReferenceOption) (metav1.OwnerReference, error) {
	d, err := childOptions(opts)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("owner reference: %w", err)
	}
	ref, err := ownerReference(owner, d)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("owner reference: %w", err)
	}
	return ref, nil
}

// ObjectReference builds a reference to obj (apiVersion, kind, namespace,
// name, uid; Kopf's build_object_reference), as events and other objects'
// fields use it. Fields obj lacks stay empty.
func ObjectReference(obj client.Object) corev1.ObjectReference {
	apiVersion, kind := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	return corev1.ObjectReference{
		APIVersion: apiVersion,
		Kind:       kind,
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		UID:        obj.GetUID(),
	}
}

func ownerReference(owner client.Object, d *childDraft) (metav1.OwnerReference, error) {
	gvk := owner.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return metav1.OwnerReference{}, errors.New("the owner has no apiVersion/kind set")
	}
	if owner.GetName() == "" || owner.GetUID() == "" {
		return metav1.OwnerReference{}, errors.New("the owner has no name or uid (is it stored yet?)")
	}
	ref := metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
	}
	if !d.notController {
		ref.Controller = ptrTrue()
	}
	if !d.noBlockOwnerDeletion {
		ref.BlockOwnerDeletion = ptrTrue()
	}
	return ref, nil
}

func isController(r metav1.OwnerReference) bool { return r.Controller != nil && *r.Controller }

func appendOwnerReference(child client.Object, ref metav1.OwnerReference, forced bool) error {
	refs := slices.Clone(child.GetOwnerReferences())
	replaced := false
	for i, r := range refs {
		switch {
		case r.UID == ref.UID:
			refs[i], replaced = ref, true
		case isController(ref) && isController(r):
			if !forced {
				return fmt.Errorf("already controlled by %s %s (Forced takes it over)", r.Kind, r.Name)
			}
			refs[i].Controller = nil
		}
	}
	if !replaced {
		refs = append(refs, ref)
	}
	child.SetOwnerReferences(refs)
	return nil
}

func harmonizeNaming(child client.Object, name string, strict, forced bool) {
	if !forced && (child.GetName() != "" || child.GetGenerateName() != "") {
		return
	}
	if strict {
		child.SetName(name)
		child.SetGenerateName("")
	} else {
		child.SetGenerateName(name + "-")
		child.SetName("")
	}
}

// label sets labels on child and on the objects at the nested paths in it.
func label(child client.Object, labels map[string]string, nested [][]string, forced bool) error {
	if len(labels) == 0 {
		return nil
	}
	own := child.GetLabels()
	if own == nil {
		own = map[string]string{}
	}
	setLabels(own, labels, forced)
	child.SetLabels(own)
	if len(nested) == 0 {
		return nil
	}
	u, isUnstructured := child.(*unstructured.Unstructured)
	var content map[string]any
	if isUnstructured {
		content = u.Object
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(child); err != nil {
			return err
		}
	}
	changed := false
	for _, path := range nested {
		target, err := nestedObject(content, path)
		if err != nil {
			return err
		}
		if target == nil {
			continue
		}
		md, err := subObject(target, "metadata", path)
		if err != nil {
			return err
		}
		ls, err := subObject(md, "labels", append(slices.Clone(path), "metadata"))
		if err != nil {
			return err
		}
		for k, v := range labels {
			if _, has := ls[k]; forced || !has {
				ls[k] = v
			}
		}
		changed = true
	}
	if changed && !isUnstructured {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(content, child)
	}
	return nil
}

func setLabels(own, labels map[string]string, forced bool) {
	for k, v := range labels {
		if _, has := own[k]; forced || !has {
			own[k] = v
		}
	}
}

// nestedObject returns the object at path in content; nil if there is none
// (a missing or null field), an error if something other than an object is
// on the way.
func nestedObject(content map[string]any, path []string) (map[string]any, error) {
	cur := content
	for i, key := range path {
		v, ok := cur[key]
		if !ok || v == nil {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("nested path %s: %s is a %T, not an object", strings.Join(path, "."), strings.Join(path[:i+1], "."), v)
		}
		cur = m
	}
	return cur, nil
}

// subObject returns the object at m[key], made if missing or null.
func subObject(m map[string]any, key string, at []string) (map[string]any, error) {
	switch v := m[key].(type) {
	case nil:
		sub := map[string]any{}
		m[key] = sub
		return sub, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("nested path %s: %s is a %T, not an object", strings.Join(at, "."), key, v)
	}
}

// describe names a child in errors: its kind and name (or generateName).
func describe(child client.Object) string {
	name := child.GetName()
	if name == "" {
		name = child.GetGenerateName() + "*"
	}
	if kind := child.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind + " " + name
	}
	return name
}
