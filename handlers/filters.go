package handlers

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Filter matches one value: of a label, an annotation or a field. Make one
// with Equal, Func, or use Present or Absent.
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

// Equal matches a value equal to v once both are seen as JSON: Equal(3)
// matches a field holding 3 or 3.0, Equal("a") a label "a".
func Equal(v any) Filter { return Filter{kind: filterEqual, value: v} }

// Func matches the values fn accepts. fn receives nil for a missing value;
// label and annotation values come as strings, field values as decoded JSON.
func Func(fn func(value any) bool) Filter { return Filter{kind: filterFunc, fn: fn} }

// Match reports whether the filter accepts value; present says whether there
// is a value at all. The zero Filter matches everything.
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

// toFilter turns the shorthand forms into a Filter: a Filter as it is, a
// func(any) bool or func(string) bool as Func, anything else but nil as Equal.
func toFilter(v any) (Filter, error) {
	switch v := v.(type) {
	case nil:
		return Filter{}, fmt.Errorf("nil is not a filter (use Absent for a missing value)")
	case Filter:
		if v.kind == filterFunc && v.fn == nil {
			return Filter{}, fmt.Errorf("Func(nil) is not a filter")
		}
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

// Labels selects objects by their labels. Each value is a string (the exact
// label value), a Filter (Present, Absent, Equal, Func), or a
// func(string) bool. All entries must match.
type Labels map[string]any

// ApplyToHandler implements Option.
func (l Labels) ApplyToHandler(o *Options) {
	o.Labels = mergeFilters(o, "label", o.Labels, l)
}

// Annotations selects objects by their annotations, like Labels.
type Annotations map[string]any

// ApplyToHandler implements Option.
func (a Annotations) ApplyToHandler(o *Options) {
	o.Annotations = mergeFilters(o, "annotation", o.Annotations, a)
}

func mergeFilters(o *Options, what string, into map[string]Filter, from map[string]any) map[string]Filter {
	if into == nil {
		into = map[string]Filter{}
	}
	keys := make([]string, 0, len(from))
	for k := range from {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, err := toFilter(from[k])
		if err != nil {
			o.problems = append(o.problems, fmt.Sprintf("%s %q: %v", what, k, err))
			continue
		}
		into[k] = f
	}
	return into
}

// When selects objects with a predicate on the whole object, evaluated after
// the other filters. The object comes in the handler's Go type.
func When[T client.Object](fn func(obj T) bool) Option {
	if fn == nil {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "When(nil) is not a filter") })
	}
	return Options{When: func(obj client.Object) bool {
		typed, ok := obj.(T)
		return ok && fn(typed)
	}}
}

// Field narrows a handler to one field, given as a dotted path such as
// "spec.replicas" or "metadata.labels.app". For OnUpdate (and OnField) the
// handler then runs only when that field changed, and receives the field's
// old and new values instead of whole essences.
func Field(path string) Option { return Options{Field: path} }

// Value requires the field named with Field to match v (a literal, Present,
// Absent, a Filter or a func(any) bool). For change handlers either the old
// or the new value may match.
func Value(v any) Option { return fieldFilter("Value", v, func(o *Options, f *Filter) { o.Value = f }) }

// OldValue requires the field's value before the change to match v.
func OldValue(v any) Option {
	return fieldFilter("OldValue", v, func(o *Options, f *Filter) { o.Old = f })
}

// NewValue requires the field's value after the change to match v.
func NewValue(v any) Option {
	return fieldFilter("NewValue", v, func(o *Options, f *Filter) { o.New = f })
}

func fieldFilter(name string, v any, set func(*Options, *Filter)) Option {
	return optionFunc(func(o *Options) {
		f, err := toFilter(v)
		if err != nil {
			o.problems = append(o.problems, fmt.Sprintf("%s: %v", name, err))
			return
		}
		set(o, &f)
	})
}

type optionFunc func(*Options)

func (f optionFunc) ApplyToHandler(o *Options) { f(o) }

// fieldPath splits a dotted field path; it reports an empty segment.
func fieldPath(path string) ([]string, error) {
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("field %q has an empty segment", path)
		}
	}
	return parts, nil
}
