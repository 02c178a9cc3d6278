package state

import (
	"strings"

	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/spec"
)

// lastAppliedAnnotation is kubectl's copy of the last applied object; it is
// not part of the essence, or every `kubectl apply` would look like two
// changes.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Essence returns what change handlers care about in an object given as a
// JSON-like map: every top-level field except apiVersion, kind, metadata and
// status, plus metadata.labels without the sharding labels (which say who
// handles an object, not what it is: see package shard), and
// metadata.annotations without the keys under ownPrefix, those under the prefixes of Kopf operators (see
// KopfMarked) and kubectl's last-applied configuration. Empty label and
// annotation maps are left out. The result shares no maps with obj.
func Essence(obj map[string]any, ownPrefix string, extra [][]string) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		out[k] = DeepCopyJSON(v)
	}
	meta, _ := obj["metadata"].(map[string]any)
	m := map[string]any{}
	if labels, ok := meta["labels"].(map[string]any); ok && len(labels) > 0 {
		kept := map[string]any{}
		for k, v := range labels {
			if !strings.HasPrefix(k, shard.ShardLabelPrefix) && !strings.HasPrefix(k, shard.DrainLabelPrefix) {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			m["labels"] = kept
		}
	}
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		kept := map[string]any{}
		kopf := KopfMarked(annotations)
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
		if _, have := Lookup(out, path); have {
			continue
		}
		if v, ok := Lookup(obj, path); ok {
			spec.SetPath(out, path, DeepCopyJSON(v))
		}
	}
	return out
}

// DeepCopyJSON copies a JSON-like value (maps, slices and scalars).
func DeepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = DeepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = DeepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}

// KopfMarked returns the annotation prefixes that hold a Kopf operator's
// state, which no essence includes (Kopf's own rule, so that operators do
// not take each other's state for changes): kopf.zalando.org and its
// subdomains, prefixes Kopf marked with <prefix>/kopf-managed, and
// prefixes starting with "kopf.", which Kopf does not mark because it
// takes them for its own.
func KopfMarked(annotations map[string]any) map[string]bool {
	var out map[string]bool
	for key := range annotations {
		prefix, name, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		if name == KopfMarkerName || prefix == DefaultKopfPrefix || strings.HasSuffix(prefix, "."+DefaultKopfPrefix) || strings.HasPrefix(prefix, "kopf.") {
			if out == nil {
				out = map[string]bool{}
			}
			out[prefix] = true
		}
	}
	return out
}

// Kopf's defaults for what it keeps on objects (Kopf's
// settings.persistence): the prefix of its annotations and its finalizer.
const (
	// DefaultKopfPrefix is the prefix of the annotations of a Kopf operator
	// with default settings.
	DefaultKopfPrefix = "kopf.zalando.org"
	// DefaultKopfFinalizer is the finalizer of a Kopf operator with default
	// settings.
	DefaultKopfFinalizer = "kopf.zalando.org/KopfFinalizerMarker"
	// KopfMarkerName is the name, under a prefix, of the annotation by which
	// Kopf marks the prefixes other Kopf operators keep their state under.
	KopfMarkerName = "kopf-managed"
)
