/*
Copyright 2026 The gopf Authors.

Licensed under the Apache License, Version 2.0 (the "License").
You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
*/

package v1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// sampleJSON is Kopf's sample object plus two fields unknown to the Go types.
// 9007199254740993 is 2^53+1, which a detour through float64 would corrupt.
const sampleJSON = `{
	"apiVersion": "kopf.dev/v1",
	"kind": "KopfExample",
	"metadata": {"name": "kopf-example-1", "namespace": "default"},
	"spec": {
		"duration": "1m",
		"field": "x",
		"items": ["item1", "item2"],
		"other": {"a": 1},
		"big": 9007199254740993
	},
	"status": {"create_fn": {"message": "hello world"}}
}`

// assertSameJSON fails unless got and want encode the same JSON value,
// regardless of key order and whitespace.
func assertSameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	dec = json.NewDecoder(bytes.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

func TestRoundTripKeepsUnknownFields(t *testing.T) {
	in := []byte(`{"spec":{"field":"x","other":{"a":1}},"status":{"create_fn":{"message":"hello world"}}}`)

	var obj KopfExample
	if err := json.Unmarshal(in, &obj); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if obj.Spec.Field != "x" {
		t.Errorf("Spec.Field = %q, want %q", obj.Spec.Field, "x")
	}
	if _, ok := obj.Spec.Extra["field"]; ok {
		t.Errorf("typed key %q also landed in Spec.Extra", "field")
	}
	assertSameJSON(t, obj.Spec.Extra["other"].Raw, []byte(`{"a":1}`))
	assertSameJSON(t, obj.Status.Extra["create_fn"].Raw, []byte(`{"message":"hello world"}`))

	out, err := json.Marshal(&obj)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	// ObjectMeta is a struct and always encodes, so an empty metadata appears.
	assertSameJSON(t, out, []byte(`{"metadata":{},`+string(in[1:])))
}

func TestRoundTripFullObject(t *testing.T) {
	var obj KopfExample
	if err := json.Unmarshal([]byte(sampleJSON), &obj); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if obj.Spec.Duration != "1m" || obj.Spec.Field != "x" || !slices.Equal(obj.Spec.Items, []string{"item1", "item2"}) {
		t.Errorf("typed spec fields = %+v", obj.Spec)
	}
	if got := obj.Spec.Extra["big"].Raw; string(got) != "9007199254740993" {
		t.Errorf("big number kept as %s", got)
	}
	out, err := json.Marshal(&obj)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	assertSameJSON(t, out, []byte(sampleJSON))
}

func TestEditingTypedFieldKeepsExtra(t *testing.T) {
	var obj KopfExample
	if err := json.Unmarshal([]byte(sampleJSON), &obj); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	obj.Spec.Field = "y"
	obj.Spec.Items = nil
	obj.Status.Extra["update_fn"] = apiextensionsv1.JSON{Raw: []byte(`{"message":"updated"}`)}

	out, err := json.Marshal(obj.Spec)
	if err != nil {
		t.Fatalf("Marshal spec: %v", err)
	}
	assertSameJSON(t, out, []byte(`{"duration":"1m","field":"y","other":{"a":1},"big":9007199254740993}`))

	out, err = json.Marshal(obj.Status)
	if err != nil {
		t.Fatalf("Marshal status: %v", err)
	}
	assertSameJSON(t, out, []byte(`{"create_fn":{"message":"hello world"},"update_fn":{"message":"updated"}}`))
}

func TestTypedFieldsWinOverExtra(t *testing.T) {
	spec := KopfExampleSpec{
		Field: "typed",
		Extra: map[string]apiextensionsv1.JSON{
			"field":    {Raw: []byte(`"extra"`)},
			"duration": {Raw: []byte(`"5m"`)},
			"nothing":  {},
		},
	}
	out, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	assertSameJSON(t, out, []byte(`{"field":"typed","nothing":null}`))
}

func TestEmptyAndNull(t *testing.T) {
	out, err := json.Marshal(&KopfExample{})
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	assertSameJSON(t, out, []byte(`{"metadata":{}}`))

	var obj KopfExample
	if err := json.Unmarshal([]byte(`{"spec":{},"status":null}`), &obj); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(obj, KopfExample{}) {
		t.Errorf("decoded empty object = %+v, want zero value", obj)
	}

	out, err = json.Marshal(KopfExampleStatus{})
	if err != nil {
		t.Fatalf("Marshal status: %v", err)
	}
	assertSameJSON(t, out, []byte(`{}`))
}

func TestUnmarshalReplacesPreviousContent(t *testing.T) {
	spec := KopfExampleSpec{Field: "old", Extra: map[string]apiextensionsv1.JSON{"stale": {Raw: []byte(`1`)}}}
	if err := json.Unmarshal([]byte(`{"duration":"2m"}`), &spec); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(spec, KopfExampleSpec{Duration: "2m"}) {
		t.Errorf("spec = %+v, want only Duration set", spec)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	for _, in := range []string{
		`{"spec":{"duration":60}}`,
		`{"spec":{"items":"item1"}}`,
		`{"spec":[]}`,
		`{"status":"ready"}`,
	} {
		var obj KopfExample
		if err := json.Unmarshal([]byte(in), &obj); err == nil {
			t.Errorf("Unmarshal(%s) succeeded, want an error", in)
		}
	}
}

// TestKeysAreCaseSensitive checks that a key differing from a typed field's
// name only in case is kept as an unknown field, as the API server would.
func TestKeysAreCaseSensitive(t *testing.T) {
	var spec KopfExampleSpec
	if err := json.Unmarshal([]byte(`{"Field":"x"}`), &spec); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if spec.Field != "" {
		t.Errorf("Field = %q, want empty", spec.Field)
	}
	if _, ok := spec.Extra["Field"]; !ok {
		t.Errorf("Extra lacks key %q: %v", "Field", spec.Extra)
	}
}

// TestSchemeCodecRoundTrip decodes and encodes through the scheme's codecs,
// the path the typed client and the informers take.
func TestSchemeCodecRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	codecs := serializer.NewCodecFactory(scheme)

	decoded, gvk, err := codecs.UniversalDeserializer().Decode([]byte(sampleJSON), nil, nil)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if gvk.GroupVersion() != GroupVersion || gvk.Kind != "KopfExample" {
		t.Errorf("decoded kind %v", gvk)
	}
	obj, ok := decoded.(*KopfExample)
	if !ok {
		t.Fatalf("decoded a %T, want *KopfExample", decoded)
	}
	if obj.Spec.Field != "x" {
		t.Errorf("Spec.Field = %q", obj.Spec.Field)
	}

	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	encoded, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, GroupVersion), obj)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	assertSameJSON(t, encoded, []byte(sampleJSON))
}

// TestUnstructuredRoundTrip converts to and from unstructured content, as
// the fake client and server-side apply helpers do.
func TestUnstructuredRoundTrip(t *testing.T) {
	var obj KopfExample
	if err := json.Unmarshal([]byte(sampleJSON), &obj); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&obj)
	if err != nil {
		t.Fatalf("ToUnstructured: %v", err)
	}
	msg, _ := u["status"].(map[string]any)["create_fn"].(map[string]any)["message"].(string)
	if msg != "hello world" {
		t.Errorf("status.create_fn.message = %q in %v", msg, u)
	}

	var back KopfExample
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatalf("FromUnstructured: %v", err)
	}
	out, err := json.Marshal(&back)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	assertSameJSON(t, out, []byte(sampleJSON))
}

// TestToUnstructuredMatchesJSON checks that the direct conversion of spec
// and status gives the content that encoding the object to JSON and decoding
// it again gives.
func TestToUnstructuredMatchesJSON(t *testing.T) {
	var sample KopfExample
	if err := json.Unmarshal([]byte(sampleJSON), &sample); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	raw := func(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }
	for name, obj := range map[string]*KopfExample{
		"sample": &sample,
		"empty":  {},
		"typed keys in Extra": {Spec: KopfExampleSpec{Field: "typed", Extra: map[string]apiextensionsv1.JSON{
			"field": raw(`"extra"`), "items": raw(`[1]`), "duration": raw(`"2m"`), "kept": raw(`true`),
		}}},
		"numbers and nulls": {Status: KopfExampleStatus{Extra: map[string]apiextensionsv1.JSON{
			"float": raw(`1.5`), "int": raw(`-3`), "null": raw(`null`), "empty": {},
			"nested": raw(`{"list":[1,2.5,"x",null,{"deep":[]}]}`),
		}}},
	} {
		got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatalf("%s: ToUnstructured: %v", name, err)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: Marshal: %v", name, err)
		}
		var want map[string]any
		if err := utiljson.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: Unmarshal: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ToUnstructured gives\n%#v\nJSON gives\n%#v", name, got, want)
		}
	}
}

func TestToUnstructuredRejectsInvalidExtra(t *testing.T) {
	obj := &KopfExample{Status: KopfExampleStatus{Extra: map[string]apiextensionsv1.JSON{"bad": {Raw: []byte(`{`)}}}}
	if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
		t.Error("ToUnstructured accepted a status field holding invalid JSON")
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	var orig KopfExample
	if err := json.Unmarshal([]byte(sampleJSON), &orig); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	before, err := json.Marshal(&orig)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}

	cp := orig.DeepCopy()
	if !reflect.DeepEqual(cp, &orig) {
		t.Fatalf("DeepCopy differs from the original")
	}

	cp.Name = "changed"
	cp.Spec.Field = "changed"
	cp.Spec.Items[0] = "changed"
	cp.Spec.Extra["other"].Raw[1] = 'X'
	cp.Spec.Extra["added"] = apiextensionsv1.JSON{Raw: []byte(`true`)}
	cp.Status.Extra["create_fn"].Raw[0] = '['
	delete(cp.Status.Extra, "create_fn")

	after, err := json.Marshal(&orig)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("changing the copy changed the original\nbefore: %s\n after: %s", before, after)
	}

	var list KopfExampleList
	list.Items = []KopfExample{orig}
	listCopy, ok := list.DeepCopyObject().(*KopfExampleList)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", list.DeepCopyObject())
	}
	listCopy.Items[0].Status.Extra["create_fn"].Raw[0] = '['
	if orig.Status.Extra["create_fn"].Raw[0] != '{' {
		t.Errorf("changing the list copy changed the original")
	}
}
