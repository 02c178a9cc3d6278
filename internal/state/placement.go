package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Where an object's state lives is decided per kind when its controller is
// set up, before its first write, from what the kind keeps in status: gopf
// keeps the state in status.<StatusField> only where that field survives a
// write and a read. Two things can drop it:
//
//   - the API server: a CRD's structural schema prunes fields it does not
//     declare (unless x-kubernetes-preserve-unknown-fields keeps them), and
//     built-in kinds (Pod, Namespace) and aggregated APIs keep only the
//     fields of their Go types;
//   - the operator's Go type: a typed status (what kubebuilder scaffolds)
//     has no field for gopf's state, so the informer cache never shows it.
//
// The decision is the same at every start of the same operator against the
// same CRD, and loading reads both of gopf's places anyway (see
// kopfFallback): a kind whose place changed (an older gopf that moved a
// kind to annotations in memory, a CRD whose schema changed, a new Storage
// option) keeps its history.

// KindSchema is what the API server keeps of a kind's objects.
type KindSchema struct {
	// Known is false when the schema could not be read (the operator may
	// not read CRDs, or the request failed): nothing is assumed then.
	Known bool
	// Crd is true for a CustomResourceDefinition's kind; root is the
	// openAPIV3Schema of the served version (nil: the version has none
	// and keeps everything).
	Crd  bool
	Root map[string]any
	// Why says why the schema is not known, for the log.
	Why string
}

// ReadKindSchema reads the schema of the kind gvk served as resource: the
// CRD's (apiextensions.k8s.io/v1) for a custom resource; for other kinds
// (the core group, groups without a dot, which no CRD can have, and groups
// with no CRD of that name) it knows that unknown fields are dropped.
func ReadKindSchema(ctx context.Context, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind, resource string) KindSchema {
	if !strings.Contains(gvk.Group, ".") {
		return KindSchema{Known: true}
	}
	if disco == nil || disco.RESTClient() == nil {
		return KindSchema{Why: "no client to read CRDs with"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	name := resource + "." + gvk.Group
	data, err := disco.RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).DoRaw(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return KindSchema{Known: true} // built in (networking.k8s.io, …) or aggregated
	case err != nil:
		return KindSchema{Why: fmt.Sprintf("reading CustomResourceDefinition %s: %s", name, describeError(err))}
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema *struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &crd); err != nil {
		return KindSchema{Why: fmt.Sprintf("decoding CustomResourceDefinition %s: %v", name, err)}
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == gvk.Version {
			out := KindSchema{Known: true, Crd: true}
			if v.Schema != nil {
				out.Root = v.Schema.OpenAPIV3Schema
			}
			return out
		}
	}
	return KindSchema{Why: fmt.Sprintf("CustomResourceDefinition %s has no version %s", name, gvk.Version)}
}

// Keeps reports whether the API server keeps value at path (a JSON-like
// value under the object's root): whether its schema keeps path and every
// field of value. Unknown schemas keep everything; kinds that are not CRDs
// keep nothing gopf adds to their status.
func (s KindSchema) Keeps(path []string, value any) bool {
	if !s.Known {
		return true
	}
	if !s.Crd {
		return false
	}
	if s.Root == nil {
		return true
	}
	for i := len(path) - 1; i >= 0; i-- {
		value = map[string]any{path[i]: value}
	}
	return schemaKeeps(s.Root, value)
}

// schemaKeeps reports whether structural pruning (Kubernetes' rules for
// CRDs) leaves value whole under schema s: a field is kept when properties
// declares it (and its value is kept under that schema), when
// additionalProperties gives a schema for it, or when
// x-kubernetes-preserve-unknown-fields keeps unknown fields (which are then
// kept whole); list items follow items.
func schemaKeeps(s map[string]any, value any) bool {
	switch v := value.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		preserve, _ := s["x-kubernetes-preserve-unknown-fields"].(bool)
		for key, item := range v {
			if sub, ok := props[key].(map[string]any); ok {
				if !schemaKeeps(sub, item) {
					return false
				}
				continue
			}
			switch more := s["additionalProperties"].(type) {
			case map[string]any:
				if !schemaKeeps(more, item) {
					return false
				}
				continue
			case bool:
				if more {
					continue
				}
			}
			if !preserve {
				return false
			}
		}
	case []any:
		items, _ := s["items"].(map[string]any)
		for _, item := range v {
			if items != nil && !schemaKeeps(items, item) {
				return false
			}
		}
	}
	return true
}

// TypeKeeps reports whether the Go type newObject makes keeps value at
// path through a conversion from JSON-like form and back, as the informer
// cache's objects go. Unstructured objects keep everything.
func TypeKeeps(newObject func() client.Object, path []string, value any) bool {
	obj := newObject()
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return true
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false
	}
	spec.SetPath(raw, path, DeepCopyJSON(value))
	back := newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, back); err != nil {
		return false
	}
	again, err := runtime.DefaultUnstructuredConverter.ToUnstructured(back)
	if err != nil {
		return false
	}
	got, ok := Lookup(any(again), path)
	return ok && SameJSON(got, value)
}

// SampleState is a state with every field set, as status storage writes
// it: what status.<StatusField> must keep.
func SampleState() map[string]any {
	return map[string]any{
		"lastHandled": `{"spec":{}}`,
		"progress": map[string]any{"handler": map[string]any{
			"purpose": "create", "started": "2026-01-02T03:04:05Z", "delayed": "2026-01-02T03:04:06Z",
			"retries": int64(1), "success": true, "failure": true, "message": "m", "handled": `{"spec":{}}`,
		}},
	}
}

// sampleResults are values a handler may return; a result field is kept
// when any of them is.
var sampleResults = []any{map[string]any{"message": "m"}, "m", int64(1), true}

// StatusPlace is what the kind keeps in status, decided once per kind.
type StatusPlace struct {
	Schema    KindSchema
	newObject func() client.Object
	field     string
	// State is "" when status.<field> keeps gopf's state, or says what
	// drops it.
	State string
	// results holds, per handler id, "" when status.<id> keeps the
	// handler's results, or what drops them; filled as results come.
	results sync.Map
	warned  sync.Map // handler id → a warning was logged
}

// NewStatusPlace decides what the kind keeps in status: a state needs
// both the API server and the Go type to keep it.
func NewStatusPlace(s KindSchema, newObject func() client.Object, field string) *StatusPlace {
	p := &StatusPlace{Schema: s, newObject: newObject, field: field}
	p.State = p.drops([]string{"status", field}, SampleState())
	return p
}

// drops says what drops value at path ("" when nothing does): the Go type
// or the API server's schema.
func (p *StatusPlace) drops(path []string, values ...any) string {
	typeOK, serverOK := false, false
	for _, v := range values {
		typeOK = typeOK || TypeKeeps(p.newObject, path, v)
		serverOK = serverOK || p.Schema.Keeps(path, v)
	}
	switch {
	case !typeOK:
		return fmt.Sprintf("the Go type %T has no field for %s", p.newObject(), strings.Join(path, "."))
	case !serverOK && p.Schema.Crd:
		return fmt.Sprintf("the CRD's schema does not declare %s (and does not keep unknown fields there)", strings.Join(path, "."))
	case !serverOK:
		return fmt.Sprintf("the API server keeps only the declared fields of a built-in kind's status, and %s is not one", strings.Join(path, "."))
	}
	return ""
}

// KeepsState reports whether status.<field> keeps gopf's state.
func (p *StatusPlace) KeepsState() bool { return p.State == "" }

// ResultDrops says what drops the results of handler id, "" if nothing.
func (p *StatusPlace) ResultDrops(id string) string {
	if why, ok := p.results.Load(id); ok {
		return why.(string)
	}
	why := p.drops([]string{"status", id}, sampleResults...)
	p.results.Store(id, why)
	return why
}

// FirstDrop reports whether this is the first dropped result of handler
// id, which is then worth a warning.
func (p *StatusPlace) FirstDrop(id string) bool {
	_, done := p.warned.LoadOrStore(id, true)
	return !done
}

// describeError names what an error of a raw read is: the discovery
// client does not decode the API server's Status, so its errors say
// "unknown"; the code says what happened.
func describeError(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	switch code := status.Status().Code; code {
	case http.StatusForbidden:
		return "forbidden: the operator's role lacks get on customresourcedefinitions.apiextensions.k8s.io (HTTP 403)"
	case http.StatusUnauthorized:
		return "unauthorized: the API server did not accept the operator's credentials (HTTP 401)"
	default:
		if msg := err.Error(); msg != "unknown" {
			return msg
		}
		return fmt.Sprintf("HTTP %d", code)
	}
}
