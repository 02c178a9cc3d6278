package state

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"
)

// Marshal encodes v as compact JSON without HTML escaping, so that
// stored essences stay readable with kubectl.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// AsDecodedJSON returns v as decoding its JSON encoding would give it (maps
// of string keys, []any, strings, float64 numbers, booleans and nil),
// without encoding it: numbers become float64 and maps and slices are
// copied. It reports false for anything whose round trip it cannot
// reproduce exactly (other Go types, strings that are not valid UTF-8,
// numbers JSON cannot hold); decode those from their encoding instead.
func AsDecodedJSON(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, utf8.ValidString(v)
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case map[string]any:
		if v == nil {
			return nil, true
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, ok := AsDecodedJSON(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		if v == nil {
			return nil, true
		}
		out := make([]any, len(v))
		for i, e := range v {
			c, ok := AsDecodedJSON(e)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return nil, false
}

// AsJSON returns v as encoding/json decodes its encoding.
func AsJSON(v any) (any, error) {
	data, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return DecodeJSON(string(data)), nil
}

func DecodeJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil
	}
	return v
}

// SameJSON compares two JSON-like values by their encoding.
func SameJSON(a, b any) bool {
	da, err1 := json.Marshal(a)
	db, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(da) == string(db)
}
