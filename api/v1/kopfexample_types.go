/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// KopfExampleSpec is the desired state of a KopfExample.
//
// Duration, Field and Items are the fields of Kopf's sample object. Any other
// field of the spec is kept, as raw JSON, in Extra.
//
// Why Extra: Kopf's CRD declares spec and status as free-form objects and its
// examples rely on that, putting whatever they need in the spec and storing
// each handler's result under status.<handler-id>. A struct with only typed
// fields would drop all such fields when the typed client decodes an object,
// and the next Update would erase them from the cluster. The custom JSON
// methods of KopfExampleSpec and KopfExampleStatus decode every field they do
// not know into Extra and encode Extra back, so a Get followed by an Update
// keeps them.
//
// +kubebuilder:pruning:PreserveUnknownFields
type KopfExampleSpec struct {
	// Duration is a duration string such as "1m".
	// +optional
	Duration string `json:"duration,omitempty"`

	// Field is a free-form string value.
	// +optional
	Field string `json:"field,omitempty"`

	// Items is a free-form list of strings.
	// +optional
	Items []string `json:"items,omitempty"`

	// Extra holds all spec fields other than duration, field and items,
	// keyed by field name, each as raw JSON. Entries named "duration",
	// "field" or "items" are ignored when encoding: the typed fields win.
	Extra map[string]apiextensionsv1.JSON `json:"-"`
}

// kopfExampleSpecKeys are the JSON names of KopfExampleSpec's typed fields.
var kopfExampleSpecKeys = []string{"duration", "field", "items"}

// MarshalJSON encodes the typed fields and the Extra fields as one JSON object.
func (s KopfExampleSpec) MarshalJSON() ([]byte, error) {
	obj := extraToObject(s.Extra, kopfExampleSpecKeys...)
	if s.Duration != "" {
		obj["duration"] = s.Duration
	}
	if s.Field != "" {
		obj["field"] = s.Field
	}
	if len(s.Items) > 0 {
		obj["items"] = s.Items
	}
	return json.Marshal(obj)
}

// ToUnstructuredWithError returns the spec as unstructured content, the
// value MarshalJSON encodes. runtime.DefaultUnstructuredConverter uses it
// instead of encoding the spec to JSON and decoding it again.
func (s KopfExampleSpec) ToUnstructuredWithError() (any, error) {
	obj, err := extraToUnstructured(s.Extra, kopfExampleSpecKeys...)
	if err != nil {
		return nil, fmt.Errorf("converting KopfExample spec: %w", err)
	}
	if s.Duration != "" {
		obj["duration"] = s.Duration
	}
	if s.Field != "" {
		obj["field"] = s.Field
	}
	if len(s.Items) > 0 {
		items := make([]any, len(s.Items))
		for i, item := range s.Items {
			items[i] = item
		}
		obj["items"] = items
	}
	return obj, nil
}

// UnmarshalJSON decodes a JSON object, filling the typed fields from their
// keys and putting every other key into Extra. A JSON null leaves s unchanged.
func (s *KopfExampleSpec) UnmarshalJSON(data []byte) error {
	var spec KopfExampleSpec
	extra, isObject, err := decodeWithExtra(data, map[string]any{
		"duration": &spec.Duration,
		"field":    &spec.Field,
		"items":    &spec.Items,
	})
	if err != nil {
		return fmt.Errorf("decoding KopfExample spec: %w", err)
	}
	if isObject {
		spec.Extra = extra
		*s = spec
	}
	return nil
}

// KopfExampleStatus is the observed state of a KopfExample.
//
// The status has no typed fields: handlers write their results under keys of
// their own choosing, usually their handler id, and every key is kept, as raw
// JSON, in Extra. See KopfExampleSpec for why.
//
// +kubebuilder:pruning:PreserveUnknownFields
type KopfExampleStatus struct {
	// Extra holds all status fields, keyed by field name, each as raw JSON.
	Extra map[string]apiextensionsv1.JSON `json:"-"`
}

// MarshalJSON encodes the Extra fields as one JSON object.
func (s KopfExampleStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(extraToObject(s.Extra))
}

// ToUnstructuredWithError returns the status as unstructured content, the
// value MarshalJSON encodes, without a detour through JSON for the whole
// status.
func (s KopfExampleStatus) ToUnstructuredWithError() (any, error) {
	obj, err := extraToUnstructured(s.Extra)
	if err != nil {
		return nil, fmt.Errorf("converting KopfExample status: %w", err)
	}
	return obj, nil
}

// UnmarshalJSON decodes a JSON object, putting every key into Extra. A JSON
// null leaves s unchanged.
func (s *KopfExampleStatus) UnmarshalJSON(data []byte) error {
	extra, isObject, err := decodeWithExtra(data, nil)
	if err != nil {
		return fmt.Errorf("decoding KopfExample status: %w", err)
	}
	if isObject {
		*s = KopfExampleStatus{Extra: extra}
	}
	return nil
}

// KopfExample is the example kind of Kopf and gopf.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName={kex,kexes}
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.spec.duration`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.create_fn.message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KopfExample struct {
	metav1.TypeMeta `json:",inline"`

	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state. It accepts arbitrary fields.
	// +optional
	Spec KopfExampleSpec `json:"spec,omitzero"`

	// Status is the observed state. It accepts arbitrary fields.
	// +optional
	Status KopfExampleStatus `json:"status,omitzero"`
}

// KopfExampleList is a list of KopfExample objects.
//
// +kubebuilder:object:root=true
type KopfExampleList struct {
	metav1.TypeMeta `json:",inline"`

	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the listed objects.
	Items []KopfExample `json:"items"`
}

func init() {
	register(&KopfExample{}, &KopfExampleList{})
}

// extraToObject returns a map ready for json.Marshal holding the entries of
// extra, minus those whose key is in skip. Entries with no raw bytes encode
// as null.
func extraToObject(extra map[string]apiextensionsv1.JSON, skip ...string) map[string]any {
	obj := make(map[string]any, len(extra)+len(skip))
	for k, v := range extra {
		obj[k] = v
	}
	for _, k := range skip {
		delete(obj, k)
	}
	return obj
}

// extraToUnstructured decodes the entries of extra, minus those whose key is
// in skip, into unstructured content: numbers become int64 or float64, as
// the Kubernetes decoders make them. Entries with no raw bytes become nil.
func extraToUnstructured(extra map[string]apiextensionsv1.JSON, skip ...string) (map[string]any, error) {
	obj := make(map[string]any, len(extra)+len(skip))
	for k, v := range extra {
		if slices.Contains(skip, k) {
			continue
		}
		var value any
		if len(v.Raw) > 0 {
			if err := utiljson.Unmarshal(v.Raw, &value); err != nil {
				return nil, fmt.Errorf("field %q: %w", k, err)
			}
		}
		obj[k] = value
	}
	return obj, nil
}

// objectToExtra turns the remaining keys of a decoded object into an Extra
// map; it returns nil when there are none.
func objectToExtra(obj map[string]json.RawMessage) map[string]apiextensionsv1.JSON {
	if len(obj) == 0 {
		return nil
	}
	extra := make(map[string]apiextensionsv1.JSON, len(obj))
	for k, raw := range obj {
		extra[k] = apiextensionsv1.JSON{Raw: raw}
	}
	return extra
}

// decodeWithExtra decodes data, which must be a JSON object or null, for a
// type with typed fields and Extra: it decodes each key named in typed into
// the field it points to and returns every other key as Extra. Keys are
// matched exactly, as the Kubernetes API does. For null it decodes nothing
// and reports isObject false, which leaves the value as it was.
func decodeWithExtra(data []byte, typed map[string]any) (extra map[string]apiextensionsv1.JSON, isObject bool, err error) {
	if isJSONNull(data) {
		return nil, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, false, err
	}
	for _, key := range slices.Sorted(maps.Keys(typed)) {
		if err := takeKey(obj, key, typed[key]); err != nil {
			return nil, false, err
		}
	}
	return objectToExtra(obj), true, nil
}

// takeKey decodes obj[key] into dst, if present, and removes it from obj.
func takeKey(obj map[string]json.RawMessage, key string, dst any) error {
	raw, ok := obj[key]
	if !ok {
		return nil
	}
	delete(obj, key)
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("field %q: %w", key, err)
	}
	return nil
}

// isJSONNull reports whether data is the JSON literal null.
func isJSONNull(data []byte) bool {
	return bytes.Equal(bytes.TrimSpace(data), []byte("null"))
}
