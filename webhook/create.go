package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/internal/spec"
)

// createTimeout is how long the API server waits for the create webhook
// before it lets the object in as it is: the webhook is an optimisation,
// and a create must not wait long for it.
const createTimeout = 2 * time.Second

// Finalizers says whether gopf's webhook server adds gopf's finalizer to
// new objects when they are created (see Options.Finalizers).
type Finalizers string

// The values of Options.Finalizers.
const (
	// FinalizersWithHandlers adds finalizers at admission when the server
	// runs for the registry's admission handlers. The default.
	FinalizersWithHandlers Finalizers = ""
	// FinalizersAlways also runs the server (in NewManager) for a registry
	// without admission handlers, to add finalizers.
	FinalizersAlways Finalizers = "always"
	// FinalizersNever leaves adding finalizers to the reconcile engine.
	FinalizersNever Finalizers = "never"
)

// createHook is the mutating webhook of one kind's creates, which stores a
// new object as the operator would first write it, so that the operator
// need not write it for that: with gopf's finalizer when the reconcile
// engine would give it one (a create then costs one write, the handlers'
// outcome, instead of two), and, when the operator is sharded, with the
// label of the shard it belongs to (instead of a write by the assigner).
// Its webhook fails open (failure policy Ignore, a short timeout) and
// never refuses an object: when it did not run, the engine adds the
// finalizer and the assigner the label, as they always do.
type createHook struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
	finalizer  *spec.CreateFinalizer // nil when no new object of the kind gets one
	shard      *spec.CreateShard     // nil when the kind is not sharded at admission
	path       string                // /create/<group>/<version>/<kind>
	name       string                // gopf-create.<kind>[.<group>].<configuration>
}

// createHooks are the create hooks of the kinds whose new objects the
// engine of op may give a finalizer, and of the kinds of its ring when op
// labels new objects with their shard, in a stable order.
func createHooks(mgr manager.Manager, op *spec.Operator, configName string) ([]*createHook, error) {
	byKind := map[schema.GroupKind]*createHook{}
	hookOf := func(gvk schema.GroupVersionKind) (*createHook, error) {
		if h, ok := byKind[gvk.GroupKind()]; ok {
			return h, nil
		}
		mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("gopf: the create webhook of %s: %w", gvk, err)
		}
		h := &createHook{
			gvk:        gvk,
			resource:   mapping.Resource.Resource,
			namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
			path:       strings.Replace(kindPath(false, gvk), "/validate/", "/create/", 1),
			name:       webhookName("gopf-create", gvk, configName),
		}
		byKind[gvk.GroupKind()] = h
		return h, nil
	}
	for gvk, f := range op.CreateFinalizers() {
		h, err := hookOf(gvk)
		if err != nil {
			return nil, err
		}
		h.finalizer = &f
	}
	if s := op.CreateShard(); s != nil {
		for _, gvk := range s.Kinds {
			h, err := hookOf(gvk)
			if err != nil {
				return nil, err
			}
			h.shard = s
		}
	}
	out := slices.Collect(maps.Values(byKind))
	slices.SortFunc(out, func(a, b *createHook) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

var _ admission.Handler = (*createHook)(nil)

// Handle answers a create with a patch that adds the finalizer when the
// engine wants one on the object and the shard label when the object
// belongs to a shard and has no label yet, and lets everything else
// through as it is. An object it cannot read is let through too: the
// engine will say what is wrong with it.
func (h *createHook) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("")
	}
	obj, err := h.decode(req)
	if err != nil {
		logf.FromContext(ctx).Info("leaving a new object as it is; the reconcile engine and the assigner will do what it needs", "error", err.Error())
		return admission.Allowed("")
	}
	var ops []jsonpatch.Operation
	if h.finalizer != nil {
		if f := h.finalizer.Decide(obj); f != "" {
			ops = append(ops, addFinalizer(obj, f))
		}
	}
	if h.shard != nil && obj.GetLabels()[h.shard.Label] == "" {
		if s := h.shard.ShardFor(h.gvk.GroupKind(), obj); s != "" {
			ops = append(ops, addLabel(obj, h.shard.Label, s))
		}
	}
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// decode reads the object of req, once: into the engine's Go type when the
// engine decides its finalizer, else its metadata alone. An object without
// a namespace gets that of the request.
func (h *createHook) decode(req admission.Request) (client.Object, error) {
	var obj client.Object = &metav1.PartialObjectMetadata{}
	if h.finalizer != nil {
		obj = h.finalizer.New()
	}
	if err := utiljson.Unmarshal(req.Object.Raw, obj); err != nil {
		return nil, fmt.Errorf("decoding a new %s: %w", h.gvk.Kind, err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	return obj, nil
}

// addFinalizer is the patch operation that adds finalizer to those of obj.
func addFinalizer(obj metav1.Object, finalizer string) jsonpatch.Operation {
	if len(obj.GetFinalizers()) == 0 {
		return jsonpatch.NewOperation("add", "/metadata/finalizers", []string{finalizer})
	}
	return jsonpatch.NewOperation("add", "/metadata/finalizers/-", finalizer)
}

// addLabel is the patch operation that sets the label key of obj to value.
func addLabel(obj metav1.Object, key, value string) jsonpatch.Operation {
	if len(obj.GetLabels()) == 0 {
		return jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{key: value})
	}
	return jsonpatch.NewOperation("add", "/metadata/labels/"+pointerEscaper.Replace(key), value)
}

// pointerEscaper escapes a key for a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// webhook is the hook's mutating webhook, reached through clientConfig: for
// creates of the kind only, failing open, invoked again if a later
// webhook changes the object (it may change what the engine selects).
func (h *createHook) webhook(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	timeoutSeconds := int32(createTimeout / time.Second)
	scope := admissionregistrationv1.ClusterScope
	if h.namespaced {
		scope = admissionregistrationv1.NamespacedScope
	}
	return admissionregistrationv1.MutatingWebhook{
		Name:         h.name,
		ClientConfig: clientConfig(h.path),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{h.gvk.Group}, APIVersions: []string{h.gvk.Version}, Resources: []string{h.resource}, Scope: &scope,
			},
		}},
		FailurePolicy:           &ignore,
		MatchPolicy:             &equivalent,
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             &none,
		TimeoutSeconds:          &timeoutSeconds,
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      &ifNeeded,
	}
}

// servesFinalizers reports whether a server with opts adds finalizers.
func servesFinalizers(opts Options) bool { return opts.Finalizers != FinalizersNever }

// validFinalizers checks the value of Options.Finalizers.
func validFinalizers(f Finalizers) error {
	switch f {
	case FinalizersWithHandlers, FinalizersAlways, FinalizersNever:
		return nil
	}
	return fmt.Errorf("gopf webhook server: Finalizers %q: want %q (the default), %q or %q", f, FinalizersWithHandlers, FinalizersAlways, FinalizersNever)
}
