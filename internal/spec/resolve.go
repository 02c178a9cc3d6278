package spec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ResolveKind finds the group/version/kind a resource handler is for — from
// its Go type, its GVK option or its Resource option — and the kind's REST
// mapping. An error says what is missing: the type in the scheme, or the
// kind on the API server.
func ResolveKind[C any](h *Handler[C], scheme *runtime.Scheme, mapper meta.RESTMapper) (schema.GroupVersionKind, *meta.RESTMapping, error) {
	o := h.Options
	var gvk schema.GroupVersionKind
	switch {
	case !h.Unstructured:
		var err error
		if gvk, err = apiutil.GVKForObject(h.NewObject(), scheme); err != nil {
			return gvk, nil, fmt.Errorf("the Go type %T is not in the manager's scheme (add its package's AddToScheme): %w", h.NewObject(), err)
		}
	case !o.GVK.Empty():
		gvk = o.GVK
	default:
		full, partial := schema.ParseResourceArg(strings.ToLower(o.Resource))
		var err error
		if full != nil {
			gvk, err = mapper.KindFor(*full)
		}
		if full == nil || err != nil {
			gvk, err = mapper.KindFor(partial.WithVersion(""))
		}
		if err != nil {
			return gvk, nil, fmt.Errorf("resource %q is not served by the API server: %w", o.Resource, err)
		}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvk, nil, fmt.Errorf("kind %s is not served by the API server (is its CRD installed?): %w", gvk, err)
	}
	return gvk, mapping, nil
}
