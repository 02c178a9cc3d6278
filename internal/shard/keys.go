package shard

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrGenerateName is returned for an object that has no name yet, only a
// generateName: its key cannot be known before the API server names it,
// so it cannot be assigned when it is created (the reference's documented
// limitation). Objects with a controller take their controller's key
// (ControllerKey) and do not have this problem.
var ErrGenerateName = errors.New("the object has only a generateName, and its key needs its name")

// ErrNoController is returned by ControllerKey for an object without an
// owner reference marked controller: true. Such an object of a controlled
// kind is left unassigned, as the reference leaves it.
var ErrNoController = errors.New("the object has no controller")

// ObjectKey returns the key on the ring of an object of kind gk: its API
// group, kind, namespace and name joined by slashes (namespace empty for
// cluster-scoped objects), as the reference hashes it. The version and the
// UID are left out: they are unknown or differ where the key is needed
// again (at admission, and in a child's owner reference), so an object
// recreated with the same name lands on the same shard.
func ObjectKey(gk schema.GroupKind, obj metav1.Object) (string, error) {
	if gk.Kind == "" {
		return "", fmt.Errorf("key of %s/%s: the kind is empty", obj.GetNamespace(), obj.GetName())
	}
	if obj.GetName() == "" {
		if obj.GetGenerateName() != "" {
			return "", fmt.Errorf("key of a %s in %q named %q...: %w", gk, obj.GetNamespace(), obj.GetGenerateName(), ErrGenerateName)
		}
		return "", fmt.Errorf("key of a %s in %q: the name is empty", gk, obj.GetNamespace())
	}
	return key(gk.Group, gk.Kind, obj.GetNamespace(), obj.GetName()), nil
}

// ControllerKey returns the key on the ring of obj's controller (its owner
// reference with controller: true), so that a controlled object lands on
// the shard of its controller, which works on both. The controller is
// taken to live in obj's namespace, as owner references require. It
// returns ErrNoController if obj has no controller.
func ControllerKey(obj metav1.Object) (string, error) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return "", fmt.Errorf("key of %s/%s: %w", obj.GetNamespace(), obj.GetName(), ErrNoController)
	}
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return "", fmt.Errorf("key of %s/%s: its controller reference misses its apiVersion, kind or name (%q, %q, %q)",
			obj.GetNamespace(), obj.GetName(), ref.APIVersion, ref.Kind, ref.Name)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", fmt.Errorf("key of %s/%s: its controller reference's apiVersion: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return key(gv.Group, ref.Kind, obj.GetNamespace(), ref.Name), nil
}

// key is the reference's key format: group/kind/namespace/name.
func key(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}
