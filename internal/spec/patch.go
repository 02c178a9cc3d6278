package spec

import "fmt"

// Patch collects changes a handler wants made to its object. The engine
// applies the changes of all handlers of one reconcile together, as one JSON
// merge patch to the object and one to its status, after the handlers
// return. Setting a value to nil removes the field. With transformations
// (Transform), each of those writes is a JSON patch instead, which carries
// the merge patch's changes too.
type Patch struct {
	object     map[string]any
	status     map[string]any
	transforms []func(obj map[string]any)
}

// Transform adds a transformation of the object (Kopf's patch.fns): fn
// receives the object as a JSON-like map (numbers as float64), with the
// Set changes of this reconcile applied, and changes it in place, e.g. to
// append to or remove from a list. The engine turns the difference into a
// JSON patch (RFC 6902), guarded by a test of the object's resourceVersion,
// and sends it in the same write as the rest of the patch. Items appended
// to a list become "add .../-" operations and removed items "remove"
// operations; other changes of a list replace it. Transformations run in
// the order they were added; changes under status go to the status
// subresource when the kind has one. A transformation may be called more
// than once for one write, each time on a fresh copy, so it should change
// only the map it gets.
func (p *Patch) Transform(fn func(obj map[string]any)) error {
	if fn == nil {
		return fmt.Errorf("Transform(nil): a transformation must be a function")
	}
	p.transforms = append(p.transforms, fn)
	return nil
}

// Set sets the field at a dotted path, e.g. "spec.replicas",
// "metadata.labels.app" or "status.phase". Paths under status go to the
// status subresource when the kind has one. Keys that contain dots (such as
// label keys) can be set with SetLabel and SetAnnotation.
func (p *Patch) Set(path string, value any) error {
	parts, err := FieldPath(path)
	if err != nil {
		return err
	}
	p.set(parts, value)
	return nil
}

// SetLabel sets (or, with value nil, removes) a label.
func (p *Patch) SetLabel(key string, value *string) {
	p.set([]string{"metadata", "labels", key}, stringOrNil(value))
}

// SetAnnotation sets (or, with value nil, removes) an annotation.
func (p *Patch) SetAnnotation(key string, value *string) {
	p.set([]string{"metadata", "annotations", key}, stringOrNil(value))
}

// SetStatus sets status.<key>, replacing what is there.
func (p *Patch) SetStatus(key string, value any) {
	p.set([]string{"status", key}, value)
}

// Empty reports whether the patch changes nothing.
func (p *Patch) Empty() bool {
	return len(p.object) == 0 && len(p.status) == 0 && len(p.transforms) == 0
}

// Transforms returns the transformations of the patch, in order.
func Transforms(p *Patch) []func(obj map[string]any) { return p.transforms }

// ObjectPatch returns the merge patch for the object's main resource
// (everything but status), or nil when there is none.
func ObjectPatch(p *Patch) map[string]any { return p.object }

// StatusPatch returns the merge patch for the object's status (the content
// of status, not wrapped in a "status" key), or nil when there is none.
func StatusPatch(p *Patch) map[string]any { return p.status }

// MergeStatus merges value into status.<key> of the patch the way a JSON
// merge patch does: maps merge key by key, anything else replaces.
func MergeStatus(p *Patch, key string, value any) {
	if p.status == nil {
		p.status = map[string]any{}
	}
	p.status[key] = mergeValue(p.status[key], value)
}

func (p *Patch) set(parts []string, value any) {
	var root *map[string]any
	if parts[0] == "status" {
		root, parts = &p.status, parts[1:]
		if len(parts) == 0 {
			// Setting status as a whole: merge its keys.
			if m, ok := value.(map[string]any); ok {
				for k, v := range m {
					p.set([]string{"status", k}, v)
				}
			}
			return
		}
	} else {
		root = &p.object
	}
	if *root == nil {
		*root = map[string]any{}
	}
	SetPath(*root, parts, value)
}

// SetPath sets the value at path in m, a JSON-like map, creating maps on
// the way and replacing whatever on the way is not a map. path must not be
// empty.
func SetPath(m map[string]any, path []string, value any) {
	for _, key := range path[:len(path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

func mergeValue(old, value any) any {
	om, ok1 := old.(map[string]any)
	nm, ok2 := value.(map[string]any)
	if !ok1 || !ok2 {
		return value
	}
	for k, v := range nm {
		om[k] = mergeValue(om[k], v)
	}
	return om
}

func stringOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
