package reconcile

import (
	"bytes"
	"encoding/json"
)

// jsonMarshal encodes v as compact JSON without HTML escaping, so that
// stored essences stay readable with kubectl.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
