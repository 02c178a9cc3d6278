package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gopf-dev/gopf/internal/spec"
)

// compactKey is the key of the digest in a compact essence. It is always
// the first key, which is how a compact essence is recognised.
const compactKey = "$gopf"

// RunTransform runs one transformation, turning a panic into an error.
func RunTransform(fn func(map[string]any), obj map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	fn(obj)
	return nil
}

// Without returns a shallow copy of m without key.
func Without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// JSONPatchOps appends to ops the RFC 6902 operations that turn from into
// to, JSON-like values at path: maps key by key; a list that only grew at
// its end by "add .../-" operations, one that only lost items by "remove"
// operations (highest index first); any other change by replacing the
// value.
func JSONPatchOps(ops []map[string]any, path string, from, to any) []map[string]any {
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
				ops = JSONPatchOps(ops, at, fv, tv)
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

// CompactEssence returns the compact form of an essence given as JSON and
// decoded: a digest of the whole, its size, and the values at paths.
func CompactEssence(full string, tree any, paths [][]string) (string, any) {
	sum := sha256.Sum256([]byte(full))
	named := map[string]any{}
	for _, path := range paths {
		if v, ok := Lookup(tree, path); ok {
			spec.SetPath(named, path, DeepCopyJSON(v))
		}
	}
	marker, _ := Marshal(map[string]any{"digest": "sha256:" + hex.EncodeToString(sum[:]), "bytes": len(full)})
	rest, _ := Marshal(named)
	// The digest goes first whatever the names of the fields, so that
	// isCompact need not decode an essence to tell.
	text := `{"` + compactKey + `":` + string(marker)
	if len(named) > 0 {
		text += "," + strings.TrimPrefix(string(rest), "{")
	} else {
		text += "}"
	}
	return text, DecodeJSON(text)
}

// IsCompact reports whether a stored essence is in the compact form.
func IsCompact(essence string) bool {
	return strings.HasPrefix(essence, `{"`+compactKey+`":`)
}

// IsCompactState reports whether st keeps any essence in the compact form.
func IsCompactState(st *State) bool {
	if st == nil {
		return false
	}
	if IsCompact(st.Essence) {
		return true
	}
	for _, rec := range st.Progress {
		if IsCompact(rec.Handled) {
			return true
		}
	}
	return false
}

// IsTooLarge reports an API error that says the request or the object is
// too large for the API server or etcd.
func IsTooLarge(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "request is too large") || strings.Contains(msg, "Request entity too large")
}
