package reconcile

import (
	"strings"

	"github.com/gopf-dev/gopf/internal/spec"
)

// lastAppliedAnnotation is kubectl's copy of the last applied object; it is
// not part of the essence, or every `kubectl apply` would look like two
// changes.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// essence returns what change handlers care about in an object given as a
// JSON-like map: every top-level field except apiVersion, kind, metadata and
// status, plus metadata.labels and metadata.annotations without the keys
// under ownPrefix, those under the prefixes of Kopf operators (see
// kopfMarked) and kubectl's last-applied configuration. Empty label and
// annotation maps are left out. The result shares no maps with obj.
func essence(obj map[string]any, ownPrefix string, extra [][]string) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		out[k] = deepCopyJSON(v)
	}
	meta, _ := obj["metadata"].(map[string]any)
	m := map[string]any{}
	if labels, ok := meta["labels"].(map[string]any); ok && len(labels) > 0 {
		m["labels"] = deepCopyJSON(labels)
	}
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		kept := map[string]any{}
		kopf := kopfMarked(annotations)
		for k, v := range annotations {
			prefix, _, _ := strings.Cut(k, "/")
			if k == lastAppliedAnnotation || strings.HasPrefix(k, ownPrefix+"/") || kopf[prefix] {
				continue
			}
			kept[k] = v
		}
		if len(kept) > 0 {
			m["annotations"] = kept
		}
	}
	if len(m) > 0 {
		out["metadata"] = m
	}
	for _, path := range extra {
		if _, have := lookup(out, path); have {
			continue
		}
		if v, ok := lookup(obj, path); ok {
			spec.SetPath(out, path, deepCopyJSON(v))
		}
	}
	return out
}

// deepCopyJSON copies a JSON-like value (maps, slices and scalars).
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}
