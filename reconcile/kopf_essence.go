package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Kopf's essence: what Kopf compares objects by, and how it writes it.

// kopfEssenceText writes an essence (compact JSON) as Kopf writes it:
// the top-level fields in the order of the object, which for objects the
// API server stores as JSON is alphabetical, then metadata (labels, then
// annotations), and a newline.
func kopfEssenceText(essence string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(essence), &m); err != nil {
		return "", err
	}
	if raw, ok := m["metadata"]; ok {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(raw, &meta); err != nil {
			return "", err
		}
		m["metadata"] = jsonObject(meta, []string{"labels", "annotations"}, nil)
	}
	return string(jsonObject(m, nil, []string{"metadata"})) + "\n", nil
}

// jsonObject writes the members of m as a JSON object: those named first,
// then the others in alphabetical order, then those named last.
func jsonObject(m map[string]json.RawMessage, first, last []string) []byte {
	placed := map[string]bool{}
	for _, k := range append(append([]string(nil), first...), last...) {
		placed[k] = true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !placed[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, k := range append(append(append([]string(nil), first...), keys...), last...) {
		v, ok := m[k]
		if !ok {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		name, _ := jsonMarshal(k)
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// normalJSON re-encodes a JSON object the way gopf encodes essences (keys
// sorted, numbers as written), so that Kopf's essence and gopf's compare as
// text.
func normalJSON(text string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	if m == nil {
		return "", fmt.Errorf("null")
	}
	data, err := jsonMarshal(m)
	return string(data), err
}

// kopfMarked returns the annotation prefixes that hold a Kopf operator's
// state, which no essence includes (Kopf's own rule, so that operators do
// not take each other's state for changes): kopf.zalando.org and its
// subdomains, prefixes Kopf marked with <prefix>/kopf-managed, and
// prefixes starting with "kopf.", which Kopf does not mark because it
// takes them for its own.
func kopfMarked(annotations map[string]any) map[string]bool {
	var out map[string]bool
	for key := range annotations {
		prefix, name, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		if name == kopfMarkerName || prefix == DefaultKopfPrefix || strings.HasSuffix(prefix, "."+DefaultKopfPrefix) || strings.HasPrefix(prefix, "kopf.") {
			if out == nil {
				out = map[string]bool{}
			}
			out[prefix] = true
		}
	}
	return out
}
