package state

import (
	"errors"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HasStatusField reports whether obj has status.<field> at all.
func HasStatusField(obj map[string]any, field string) bool {
	status, _ := obj["status"].(map[string]any)
	_, ok := status[field]
	return ok
}

// ErrTooLarge marks state that cannot be stored because of its size.
var ErrTooLarge = errors.New("gopf's state does not fit on the object")

// ApplyMergePatch applies a JSON merge patch (RFC 7386) to target in place
// and returns it.
func ApplyMergePatch(target, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			tv, ok := target[k].(map[string]any)
			if !ok {
				tv = map[string]any{}
			}
			target[k] = ApplyMergePatch(tv, pv)
		default:
			target[k] = DeepCopyJSON(v)
		}
	}
	return target
}

func MergeInto(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if dm, ok := dst[k].(map[string]any); ok {
			if sm, ok := v.(map[string]any); ok {
				dst[k] = MergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// StatusOf returns the status of obj as a JSON-like map, as the whole
// object converted to one would hold it. An unstructured object's is its
// own map (not a copy); of a typed object only the status field is
// converted, not the object's metadata and spec.
func StatusOf(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		status, _ := u.UnstructuredContent()["status"].(map[string]any)
		return status, nil
	}
	if field, ok := statusField(obj); ok {
		if !field.IsValid() {
			return nil, nil // no status field, or a nil pointer
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(field.Interface())
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	status, _ := raw["status"].(map[string]any)
	return status, nil
}

// statusFields caches, per Go type of an object, the index of its field
// named "status" in JSON: noStatus for a type without one, unknownStatus
// for a type whose embedded structs might hold one.
var statusFields sync.Map // reflect.Type -> int

const (
	noStatus      = -1
	unknownStatus = -2
)

// statusField returns a pointer to obj's status struct, or an invalid
// value if obj has no status or a nil one. It reports false when it cannot
// tell (obj is not a pointer to a struct, its status is not a struct, or
// it embeds structs), so that the caller converts the whole object.
func statusField(obj client.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	v = v.Elem()
	cached, known := statusFields.Load(v.Type())
	if !known {
		cached = statusIndex(v.Type())
		statusFields.Store(v.Type(), cached)
	}
	switch i := cached.(int); i {
	case noStatus:
		return reflect.Value{}, true
	case unknownStatus:
		return reflect.Value{}, false
	default:
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			if f.IsNil() {
				return reflect.Value{}, true
			}
			return f, true
		case f.Kind() == reflect.Struct:
			return f.Addr(), true
		}
		return reflect.Value{}, false
	}
}

// statusIndex is the index of t's field that JSON names "status", or
// noStatus or unknownStatus (see statusFields). TypeMeta and ObjectMeta,
// embedded in every Kubernetes object, hold no status.
func statusIndex(t reflect.Type) int {
	embeds := false
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous {
			if f.Type != typeMetaType && f.Type != objectMetaType {
				embeds = true
			}
			continue
		}
		if f.IsExported() && name == "status" {
			return i
		}
	}
	if embeds {
		return unknownStatus
	}
	return noStatus
}

var (
	typeMetaType   = reflect.TypeFor[metav1.TypeMeta]()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
)

// Changes reports whether merging patch into current (as a JSON merge patch
// would) changes anything.
func Changes(current, patch any) bool {
	pm, ok1 := patch.(map[string]any)
	cm, ok2 := current.(map[string]any)
	if !ok1 || !ok2 {
		return !SameJSON(current, patch)
	}
	for k, v := range pm {
		if Changes(cm[k], v) {
			return true
		}
	}
	return false
}
