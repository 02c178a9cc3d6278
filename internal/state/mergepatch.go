package state

import (
	"errors"

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

// StatusOf returns the status of obj as a JSON-like map.
func StatusOf(obj client.Object) (map[string]any, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	status, _ := raw["status"].(map[string]any)
	return status, nil
}

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
