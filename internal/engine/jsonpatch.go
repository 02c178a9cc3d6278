package engine

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// transformed is the object as a patch leaves it when the patch has
// transformations (Patch.Transform): raw, as decoded JSON, with the patch's
// merge changes applied and then its transformations, in order. It returns
// nil when the patch has none: then the write is a merge patch as ever.
func (k *KindController) transformed(raw map[string]any, p *spec.Patch) (map[string]any, error) {
	fns := spec.Transforms(p)
	if len(fns) == 0 {
		return nil, nil
	}
	base, err := state.AsJSON(raw)
	if err != nil {
		return nil, err
	}
	merge := map[string]any{}
	for key, v := range spec.ObjectPatch(p) {
		merge[key] = v
	}
	if status := spec.StatusPatch(p); len(status) > 0 {
		merge = state.MergeInto(merge, map[string]any{"status": status})
	}
	changes, err := state.AsJSON(merge)
	if err != nil {
		return nil, err
	}
	obj := state.ApplyMergePatch(base.(map[string]any), changes.(map[string]any))
	for i, fn := range fns {
		if err := runTransform(fn, obj); err != nil {
			return nil, fmt.Errorf("transformation %d of the patch of a %s: %w", i+1, k.Gvk.Kind, err)
		}
	}
	return obj, nil
}

// runTransform runs one transformation, turning a panic into an error.
func runTransform(fn func(map[string]any), obj map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	fn(obj)
	return nil
}

// sendPart sends one part of a write: body, the merge patch of the object
// (status false) or of its status (status true; body is {"status": ...}).
// With final (what transformed returned: body's changes are in it) it sends
// a JSON patch from raw to final for that part instead, guarded by a test of
// obj's resourceVersion; nothing when the part did not change. whole is
// as for sendAs.
func (k *KindController) sendPart(ctx context.Context, obj client.Object, raw, final, body map[string]any, status, whole bool) error {
	if final == nil {
		return k.send(ctx, obj, body, status, whole)
	}
	base, err := state.AsJSON(raw)
	if err != nil {
		return err
	}
	var ops []map[string]any
	if status {
		ops = jsonPatchOps(ops, "/status", base.(map[string]any)["status"], final["status"])
	} else {
		from, to := base.(map[string]any), final
		if k.HasStatus {
			from, to = without(from, "status"), without(to, "status")
		}
		ops = jsonPatchOps(ops, "", from, to)
	}
	if len(ops) == 0 {
		return nil
	}
	ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()}}, ops...)
	return k.sendAs(ctx, obj, types.JSONPatchType, ops, status, whole)
}

// without returns a shallow copy of m without key.
func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// jsonPatchOps appends to ops the RFC 6902 operations that turn from into
// to, JSON-like values at path: maps key by key; a list that only grew at
// its end by "add .../-" operations, one that only lost items by "remove"
// operations (highest index first); any other change by replacing the
// value.
func jsonPatchOps(ops []map[string]any, path string, from, to any) []map[string]any {
	if reflect.DeepEqual(from, to) {
		return ops
	}
	fm, fromMap := from.(map[string]any)
	tm, toMap := to.(map[string]any)
	if fromMap && toMap {
		for _, key := range sortedKeys(fm, tm) {
			fv, inFrom := fm[key]
			tv, inTo := tm[key]
			at := path + "/" + escapePointer(key)
			switch {
			case inFrom && !inTo:
				ops = append(ops, map[string]any{"op": "remove", "path": at})
			case !inFrom && inTo:
				ops = append(ops, map[string]any{"op": "add", "path": at, "value": tv})
			default:
				ops = jsonPatchOps(ops, at, fv, tv)
			}
		}
		return ops
	}
	fl, fromList := from.([]any)
	tl, toList := to.([]any)
	if fromList && toList {
		if len(tl) > len(fl) && reflect.DeepEqual(fl, tl[:len(fl)]) {
			for _, item := range tl[len(fl):] {
				ops = append(ops, map[string]any{"op": "add", "path": path + "/-", "value": item})
			}
			return ops
		}
		if removed, ok := removedIndexes(fl, tl); ok {
			for i := len(removed) - 1; i >= 0; i-- {
				ops = append(ops, map[string]any{"op": "remove", "path": path + "/" + strconv.Itoa(removed[i])})
			}
			return ops
		}
	}
	if path == "" {
		// The root itself is never replaced: it is a map on both sides.
		return ops
	}
	return append(ops, map[string]any{"op": "replace", "path": path, "value": to})
}

// removedIndexes reports whether to is from with some items left out, and
// which indexes of from those are (ascending).
func removedIndexes(from, to []any) ([]int, bool) {
	if len(to) >= len(from) {
		return nil, false
	}
	var removed []int
	j := 0
	for i, item := range from {
		if j < len(to) && reflect.DeepEqual(item, to[j]) {
			j++
			continue
		}
		removed = append(removed, i)
	}
	return removed, j == len(to)
}

// sortedKeys returns the keys of a and b, sorted, each once.
func sortedKeys(a, b map[string]any) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
