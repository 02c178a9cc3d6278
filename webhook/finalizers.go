package webhook

import (
	"context"
	"fmt"
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
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/internal/spec"
)

// finalizerTimeout is how long the API server waits for the finalizer
// webhook before it lets the object in without the finalizer: it is an
// optimisation, and a create must not wait long for it.
const finalizerTimeout = 2 * time.Second

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

// finalizerHook adds gopf's finalizer to new objects of one kind that the
// reconcile engine would give one, so that the engine need not add it with
// a write of its own before the first handler runs: a create then costs
// one write (the handlers' outcome) instead of two. Its webhook fails open
// (failure policy Ignore, a short timeout) and never refuses an object:
// when it did not run, the engine adds the finalizer as it always does.
type finalizerHook struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
	decide     spec.CreateFinalizer
	path       string // /finalize/<group>/<version>/<kind>
	name       string // finalizer.<kind>[.<group>].<configuration>
}

// finalizerHooks are the finalizer hooks of the kinds whose new objects
// the engine of op may give a finalizer, in a stable order.
func finalizerHooks(mgr manager.Manager, op *spec.Operator, configName string) ([]*finalizerHook, error) {
	var out []*finalizerHook
	for gvk, decide := range op.CreateFinalizers() {
		mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("gopf: the finalizer webhook of %s: %w", gvk, err)
		}
		out = append(out, &finalizerHook{
			gvk:        gvk,
			resource:   mapping.Resource.Resource,
			namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
			decide:     decide,
			path:       strings.Replace(kindPath(false, gvk), "/validate/", "/finalize/", 1),
			name:       webhookName("finalizer", gvk, configName),
		})
	}
	slices.SortFunc(out, func(a, b *finalizerHook) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

var _ admission.Handler = (*finalizerHook)(nil)

// Handle answers a create with a patch that adds the finalizer when the
// engine wants one on the object, and lets everything else through as it
// is. An object it cannot read is let through too: the engine will say
// what is wrong with it.
func (f *finalizerHook) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("")
	}
	obj := f.decide.New()
	if err := utiljson.Unmarshal(req.Object.Raw, obj); err != nil {
		logf.FromContext(ctx).Info("not adding the finalizer at admission; the reconcile engine will if it must",
			"error", fmt.Errorf("decoding a new %s: %w", f.gvk.Kind, err).Error())
		return admission.Allowed("")
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	finalizer := f.decide.Decide(obj)
	if finalizer == "" {
		return admission.Allowed("")
	}
	op := jsonpatch.NewOperation("add", "/metadata/finalizers", []string{finalizer})
	if len(obj.GetFinalizers()) > 0 {
		op = jsonpatch.NewOperation("add", "/metadata/finalizers/-", finalizer)
	}
	return admission.Patched("", op)
}

// webhook is the hook's mutating webhook, reached through clientConfig: for
// creates of the kind only, failing open, invoked again if a later
// webhook changes the object (it may change what the engine selects).
func (f *finalizerHook) webhook(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	timeoutSeconds := int32(finalizerTimeout / time.Second)
	scope := admissionregistrationv1.ClusterScope
	if f.namespaced {
		scope = admissionregistrationv1.NamespacedScope
	}
	return admissionregistrationv1.MutatingWebhook{
		Name:         f.name,
		ClientConfig: clientConfig(f.path),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{f.gvk.Group}, APIVersions: []string{f.gvk.Version}, Resources: []string{f.resource}, Scope: &scope,
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
