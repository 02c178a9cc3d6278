package kopfstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gopf-dev/gopf/internal/state"
)

// Kopf's essence: what Kopf compares objects by, and how it writes it.

// EssenceText writes an essence (compact JSON) as Kopf writes it:
// the top-level fields in the order of the object, which for objects the
// API server stores as JSON is alphabetical, then metadata (labels, then
// annotations), and a newline.
func EssenceText(essence string) (string, error) {
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
		name, _ := state.Marshal(k)
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
	data, err := state.Marshal(m)
	return string(data), err
}
