package objects

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Decode returns the field at path inside value, converted to V as
// encoding/json converts decoded JSON into a Go value: into a string, an
// int32, a slice, a struct with json tags, and so on.
//
// value is an object or value as gopf hands it over: an
// *unstructured.Unstructured object, handlers.Cause.Old and .New, a result
// from handlers.Cause.Result, a result stored under status. Anything else
// is first marshalled to JSON, so a typed object works too. path is a
// dotted string such as "spec.replicas" or the keys one by one (see
// handlers.FieldPath); "" or an empty list decodes value as a whole.
//
// A field that is absent, or null, is V's zero value and no error: decode
// into a pointer (*int64, *string) to tell it from a zero. A field that does
// not fit V, or a path that runs through something other than an object, is
// an error naming the path.
//
//	replicas, err := objects.Decode[int32](obj, "spec.replicas")
//	spec, err := objects.Decode[pageSpec](obj, "spec") // type pageSpec struct{ Title string `json:"title"` }
//	created, err := objects.Decode[string](obj, "status.create_fn.pod")
func Decode[V any, P handlers.FieldPath](value any, path P) (V, error) {
	var out V
	keys, problem := spec.FieldKeys(path)
	if problem != "" && len(keys) > 0 {
		return out, fmt.Errorf("decode: %s", problem)
	}
	where := "the value"
	if len(keys) > 0 {
		where = spec.PathString(keys)
	}
	found, err := lookup(value, keys)
	if err != nil {
		return out, fmt.Errorf("decode %s: %w", where, err)
	}
	if found == nil {
		return out, nil
	}
	data, err := json.Marshal(found)
	if err != nil {
		return out, fmt.Errorf("decode %s: %w", where, err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, fmt.Errorf("decode %s: %w", where, err)
	}
	return out, nil
}

// lookup returns what is at keys inside value, nil when it is absent.
func lookup(value any, keys []string) (any, error) {
	if u, ok := value.(*unstructured.Unstructured); ok {
		if u == nil {
			return nil, nil
		}
		value = u.Object
	}
	if _, ok := value.(map[string]any); !ok && value != nil && len(keys) > 0 {
		var err error
		if value, err = toJSONValue(value); err != nil {
			return nil, err
		}
	}
	for i, key := range keys {
		if value == nil {
			return nil, nil
		}
		m, ok := value.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an object", describeAt(keys[:i]), jsonKind(value))
		}
		value = m[key]
	}
	return value, nil
}

// describeAt names where a lookup stopped: the keys walked so far, or the
// value itself.
func describeAt(keys []string) string {
	if len(keys) == 0 {
		return "the value"
	}
	return spec.PathString(keys)
}

// jsonKind names the JSON type of a decoded JSON value, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case int64, float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// toJSONValue converts v into decoded JSON (maps, lists, strings, numbers as
// json.Number, booleans, nil) by way of its JSON encoding.
func toJSONValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keeps int64 values above 2^53 exact
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
