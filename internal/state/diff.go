package state

import (
	"reflect"
	"sort"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Diff lists the changes from old to new, JSON-like values, sorted by path.
// Maps are compared key by key; anything else (lists included) as a whole.
func Diff(old, new any) spec.Diff {
	var out spec.Diff
	diffInto(&out, nil, old, new)
	return out
}

func diffInto(out *spec.Diff, path []string, old, new any) {
	om, oldIsMap := old.(map[string]any)
	nm, newIsMap := new.(map[string]any)
	if oldIsMap && newIsMap {
		keys := make([]string, 0, len(om)+len(nm))
		for k := range om {
			keys = append(keys, k)
		}
		for k := range nm {
			if _, ok := om[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			diffInto(out, append(append([]string(nil), path...), k), om[k], nm[k])
		}
		return
	}
	switch {
	case reflect.DeepEqual(old, new):
	case old == nil:
		*out = append(*out, spec.DiffItem{Op: spec.DiffAdd, Path: path, New: new})
	case new == nil:
		*out = append(*out, spec.DiffItem{Op: spec.DiffRemove, Path: path, Old: old})
	default:
		*out = append(*out, spec.DiffItem{Op: spec.DiffChange, Path: path, Old: old, New: new})
	}
}

// Lookup returns the value at path in a JSON-like value, and whether it is
// there.
func Lookup(v any, path []string) (any, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}
