package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Filter matches one value: of a label, an annotation or a field. The zero
// Filter matches everything.
type Filter struct {
	kind  filterKind
	value any
	fn    func(value any) bool
}

type filterKind int

const (
	filterEqual filterKind = iota + 1
	filterPresent
	filterAbsent
	filterFunc
)

var (
	// Present matches any value, as long as there is one (an empty label
	// value counts as present).
	Present = Filter{kind: filterPresent}
	// Absent matches only a missing value.
	Absent = Filter{kind: filterAbsent}
)

// Equal matches a value equal to v once both are seen as JSON.
func Equal(v any) Filter { return Filter{kind: filterEqual, value: v} }

// Func matches the values fn accepts; fn receives nil for a missing value.
func Func(fn func(value any) bool) Filter { return Filter{kind: filterFunc, fn: fn} }

// Match reports whether the filter accepts value; present says whether there
// is a value at all.
func (f Filter) Match(value any, present bool) bool {
	switch f.kind {
	case filterEqual:
		return present && jsonEqual(f.value, value)
	case filterPresent:
		return present
	case filterAbsent:
		return !present
	case filterFunc:
		if !present {
			value = nil
		}
		return f.fn(value)
	}
	return true
}

// String describes the filter for messages.
func (f Filter) String() string {
	switch f.kind {
	case filterEqual:
		return fmt.Sprintf("equal to %v", f.value)
	case filterPresent:
		return "present"
	case filterAbsent:
		return "absent"
	case filterFunc:
		return "accepted by a function"
	}
	return "anything"
}

// ParseFilter turns the shorthand forms of a filter into a Filter: a Filter
// as it is, a func(any) bool or func(string) bool as Func, anything else
// but nil as Equal.
func ParseFilter(v any) (Filter, error) {
	switch v := v.(type) {
	case nil:
		return Filter{}, fmt.Errorf("nil is not a filter (use Absent for a missing value)")
	case Filter: // Present or Absent
		return v, nil
	case func(any) bool:
		if v == nil {
			return Filter{}, fmt.Errorf("a nil function is not a filter")
		}
		return Func(v), nil
	case func(string) bool:
		if v == nil {
			return Filter{}, fmt.Errorf("a nil function is not a filter")
		}
		return Func(func(x any) bool { s, _ := x.(string); return v(s) }), nil
	default:
		if _, err := json.Marshal(v); err != nil {
			return Filter{}, fmt.Errorf("%v cannot be compared as JSON: %w", v, err)
		}
		return Equal(v), nil
	}
}

// jsonEqual compares a and b as their JSON forms decode.
func jsonEqual(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}

// MatchMetadata reports whether every filter accepts the value of its key
// in values (labels or annotations).
func MatchMetadata(filters map[string]Filter, values map[string]string) bool {
	for key, f := range filters {
		v, ok := values[key]
		if !f.Match(v, ok) {
			return false
		}
	}
	return true
}

// ObjectSelector returns the part of label filters that the API server can
// apply itself, as a label selector: an exact value becomes "In", Present
// "Exists" and Absent "DoesNotExist". Function filters, and values that are
// not valid label values, are left out (the caller applies them). It returns
// nil when there is nothing to select on, which selects every object.
func ObjectSelector(labels map[string]Filter) *metav1.LabelSelector {
	var reqs []metav1.LabelSelectorRequirement
	for key, f := range labels {
		if len(validation.IsQualifiedName(key)) > 0 {
			continue
		}
		req := metav1.LabelSelectorRequirement{Key: key}
		switch f.kind {
		case filterEqual:
			s, ok := f.value.(string)
			if !ok || len(validation.IsValidLabelValue(s)) > 0 {
				continue
			}
			req.Operator, req.Values = metav1.LabelSelectorOpIn, []string{s}
		case filterPresent:
			req.Operator = metav1.LabelSelectorOpExists
		case filterAbsent:
			req.Operator = metav1.LabelSelectorOpDoesNotExist
		default:
			continue
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Key < reqs[j].Key })
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

// FieldPath splits a dotted field path; it reports an empty segment.
func FieldPath(path string) ([]string, error) {
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("field %q has an empty segment", path)
		}
	}
	return parts, nil
}

// PathString renders a field path for messages: dotted when no key has a
// dot in it, else as the list of keys.
func PathString(keys []string) string {
	for _, k := range keys {
		if strings.Contains(k, ".") || k == "" {
			return fmt.Sprintf("%q", keys)
		}
	}
	return fmt.Sprintf("%q", strings.Join(keys, "."))
}
