package spec

import (
	"fmt"
	"reflect"
	"strings"
)

// FieldKeys turns a field path, dotted or given as keys (handlers.FieldPath),
// into keys, with what makes it unable to match ("" if nothing). The keys
// are returned even then, so that a handler's default id shows the path as
// given.
func FieldKeys[P interface{ ~string | ~[]string }](path P) ([]string, string) {
	switch p := any(path).(type) {
	case string:
		return dottedKeys(p)
	case []string:
		return listedKeys(p)
	}
	// A type defined on string or []string.
	v := reflect.ValueOf(path)
	if v.Kind() == reflect.String {
		return dottedKeys(v.String())
	}
	return listedKeys(v.Convert(reflect.TypeOf([]string(nil))).Interface().([]string))
}

// dottedKeys splits a dotted path; see FieldKeys.
func dottedKeys(path string) ([]string, string) {
	if path == "" {
		return nil, "the field path is empty"
	}
	keys := strings.Split(path, ".")
	for _, k := range keys {
		if k == "" {
			return keys, fmt.Sprintf("field %q has an empty segment", path)
		}
	}
	if len(keys) > 3 && keys[0] == "metadata" && (keys[1] == "labels" || keys[1] == "annotations") {
		return keys, fmt.Sprintf("field %q can never match: %s values are strings, with no keys inside; "+
			"for a key with dots give the path as keys: []string{%q, %q, %q}",
			path, strings.TrimSuffix(keys[1], "s"), keys[0], keys[1], strings.Join(keys[2:], "."))
	}
	return keys, ""
}

// listedKeys copies a path given as keys; see FieldKeys.
func listedKeys(path []string) ([]string, string) {
	if len(path) == 0 {
		return nil, "the field path is empty"
	}
	keys := append([]string(nil), path...)
	for i, k := range keys {
		if k == "" {
			return keys, fmt.Sprintf("field %q has an empty key at position %d", keys, i)
		}
	}
	return keys, ""
}
