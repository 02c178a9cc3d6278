package objects

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// ChildPatch is a JSON merge patch (RFC 7386) for an object other than the
// one being handled, typically a child, typed or unstructured. It is built
// field by field, as handlers.Cause.Patch is for the handled object, so
// that no JSON is written by hand, and it is a client.Patch, sent with the
// client:
//
//	patch := objects.NewChildPatch().Set("spec.replicas", db.Spec.Replicas)
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
	if _, problem := spec.FieldKeys(keys); problem != "" {
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
