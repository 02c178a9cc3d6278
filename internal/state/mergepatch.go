package state

import "errors"

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
