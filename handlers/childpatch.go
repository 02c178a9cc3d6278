package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// The two helpers of this file spare a handler the JSON plumbing around
// objects it has no Go type for, and around objects other than the one it
// handles: Decode reads a field into a Go value, ChildPatch changes fields of
// a child through the client.

// Decode returns the field at path inside value, converted to V as
// encoding/json converts decoded JSON into a Go value: into a string, an
// int32, a slice, a struct with json tags, and so on.
//
// value is an object or value as gopf hands it over: an
// *unstructured.Unstructured object, Cause.Old and Cause.New, a result from
// Cause.Result, a result stored under status. Anything else is first
// marshalled to JSON, so a typed object works too. path is a dotted string
// such as "spec.replicas" or the keys one by one (see FieldPath); "" or an
// empty list decodes value as a whole.
//
// A field that is absent, or null, is V's zero value and no error: decode
// into a pointer (*int64, *string) to tell it from a zero. A field that does
// not fit V, or a path that runs through something other than an object, is
// an error naming the path.
//
//	replicas, err := handlers.Decode[int32](obj, "spec.replicas")
//	spec, err := handlers.Decode[pageSpec](obj, "spec") // type pageSpec struct{ Title string `json:"title"` }
//	created, err := handlers.Decode[string](obj, "status.create_fn.pod")
func Decode[V any, P FieldPath](value any, path P) (V, error) {
	var out V
	keys, problem := fieldKeys(path)
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

// ChildPatch is a JSON merge patch (RFC 7386) for an object other than the
// one being handled, typically a child, typed or unstructured. It is built
// field by field, as Cause.Patch is for the handled object, so that no JSON
// is written by hand, and it is a client.Patch, sent with the client:
//
//	patch := handlers.NewChildPatch().Set("spec.replicas", db.Spec.Replicas)
//	err := c.Client.Patch(ctx, sts, patch)
//
// The object passed to Patch needs only what names it: its namespace and
// name, and its apiVersion and kind when it is unstructured. The patch
// changes the fields it sets and nothing else, needs no read of the object
// first, and the client fills the object with what the API server returns.
// Setting a field to nil removes it. Later changes win where they overlap
// earlier ones. Values are copied (as JSON) when they are set.
//
// Changes under status take effect only through the status subresource,
// where the kind has one: c.Client.Status().Patch(ctx, obj, patch), which in
// turn ignores all but status.
//
// The setters return the patch, for chaining. A bad path or a value that
// cannot be marshalled to JSON is reported by the client's Patch call (from
// Data), which then sends nothing. The zero ChildPatch is an empty patch,
// ready for use.
type ChildPatch struct {
	fields map[string]any
	err    error
}

// NewChildPatch returns an empty ChildPatch.
func NewChildPatch() *ChildPatch { return &ChildPatch{} }

// Set sets the field at a dotted path, such as "spec.replicas" or
// "metadata.labels.app", to value; nil removes the field. A key with dots in
// it (a ConfigMap key such as "index.html", a label such as
// "app.kubernetes.io/name") needs SetKeys, SetLabel or SetAnnotation.
func (p *ChildPatch) Set(path string, value any) *ChildPatch {
	keys, err := spec.FieldPath(path)
	if err == nil && len(keys) > 3 && keys[0] == "metadata" && (keys[1] == "labels" || keys[1] == "annotations") {
		err = fmt.Errorf("%s values are strings, with no keys inside; for a key with dots use SetLabel or SetAnnotation",
			strings.TrimSuffix(keys[1], "s"))
	}
	if err != nil {
		p.fail(fmt.Errorf("Set(%q): %w", path, err))
		return p
	}
	return p.SetKeys(keys, value)
}

// SetKeys sets the field at the path given key by key, such as
// []string{"data", "index.html"}, to value; nil removes the field.
func (p *ChildPatch) SetKeys(keys []string, value any) *ChildPatch {
	if _, problem := listedKeys(keys); problem != "" {
		p.fail(fmt.Errorf("SetKeys(%q): %s", keys, problem))
		return p
	}
	v, err := toJSONValue(value)
	if err != nil {
		p.fail(fmt.Errorf("set %s: %w", spec.PathString(keys), err))
		return p
	}
	if p.fields == nil {
		p.fields = map[string]any{}
	}
	spec.SetPath(p.fields, keys, v)
	return p
}

// SetLabel sets (or, with value nil, removes) a label.
func (p *ChildPatch) SetLabel(key string, value *string) *ChildPatch {
	return p.SetKeys([]string{"metadata", "labels", key}, stringOrNil(value))
}

// SetAnnotation sets (or, with value nil, removes) an annotation.
func (p *ChildPatch) SetAnnotation(key string, value *string) *ChildPatch {
	return p.SetKeys([]string{"metadata", "annotations", key}, stringOrNil(value))
}

// Type is the patch's content type, a JSON merge patch; it makes ChildPatch
// a client.Patch.
func (p *ChildPatch) Type() types.PatchType { return types.MergePatchType }

// Data returns the patch as JSON, or the first error of its setters; it
// makes ChildPatch a client.Patch. The object does not take part: the patch
// is the same for any object.
func (p *ChildPatch) Data(client.Object) ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.fields == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(p.fields)
}

// fail keeps the first error of the patch's setters.
func (p *ChildPatch) fail(err error) {
	if p.err == nil {
		p.err = fmt.Errorf("child patch: %w", err)
	}
}

func stringOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// ChildPatch is sent by controller-runtime's clients.
var _ client.Patch = (*ChildPatch)(nil)
