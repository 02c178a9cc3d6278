package webhook

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/logs"
	"github.com/gopf-dev/gopf/internal/spec"
)

// hook is one admission handler, resolved against the API server.
type hook struct {
	reg        *contract.Handler
	op         *spec.Operator // memos and indexes shared with the reconcile engine
	client     client.Client  // the manager's
	gvk        schema.GroupVersionKind
	resource   string // plural resource name
	namespaced bool
	path       string // the handler's own path on the server
	name       string // the webhook's name in its configuration
}

// Setup serves the admission handlers of reg (OnValidate, OnMutate) on the
// manager's webhook server and, when that server was made by NewServer,
// keeps the webhook configurations for them in the cluster while the
// manager runs. It does nothing when reg has no admission handlers.
//
// Each handler is served at its own path,
//
//	/validate/<group>/<version>/<kind>/<handler-id>   (OnValidate)
//	/mutate/<group>/<version>/<kind>/<handler-id>     (OnMutate)
//
// with "core" as the group of built-in kinds and the kind and id in lower
// case, and gets its own webhook in the configurations. Every kind is also
// served at /validate/<group>/<version>/<kind> and
// /mutate/<group>/<version>/<kind>, which run all handlers of the kind and
// are meant for static manifests (config/webhook).
//
// Setup resolves each handler's kind with the manager's REST mapper, so it
// needs a reachable API server, and fails naming the handler when a kind is
// not served or a handler id cannot be part of a webhook name.
func Setup(mgr manager.Manager, reg *handlers.Registry) error {
	if err := reg.Err(); err != nil {
		return err
	}
	set := contract.SetOf(reg)
	regs := set.Handlers(spec.KindValidate, spec.KindMutate)
	if len(regs) == 0 {
		return nil // and no webhook server: asking the manager for one would start one
	}
	srv, _ := mgr.GetWebhookServer().(*Server)
	name := ""
	if srv != nil {
		name = srv.opts.Name
		if err := keepCertsInSecret(mgr, srv); err != nil {
			return err
		}
	}
	hooks, err := resolveHooks(mgr, set, regs, name)
	if err != nil {
		return err
	}
	serveHooks(mgr, hooks)
	created, err := serveCreate(mgr, set, srv)
	if err != nil {
		return err
	}

	log := ctrl.Log.WithName("gopf").WithName("webhook")
	if srv == nil || srv.opts.StaticConfigurations {
		log.Info("serving admission handlers; their webhook configurations are not managed by gopf", "handlers", len(hooks))
		return nil
	}
	cm, err := newConfigManager(mgr, srv, hooks, created)
	if err != nil {
		return err
	}
	return mgr.Add(cm)
}

// serveHooks registers the hooks on mgr's webhook server: each at its own
// path, and with the other hooks of its kind at the kind's path.
func serveHooks(mgr manager.Manager, hooks []*hook) {
	byPath := map[string]*reviewer{}
	var paths []string
	add := func(path string, mutating bool, h *hook) {
		rv, ok := byPath[path]
		if !ok {
			rv = &reviewer{mutating: mutating}
			byPath[path] = rv
			paths = append(paths, path)
		}
		rv.hooks = append(rv.hooks, h)
	}
	for _, h := range hooks {
		mutating := h.reg.Kind == spec.KindMutate
		add(h.path, mutating, h)
		add(kindPath(mutating, h.gvk), mutating, h)
	}
	for _, path := range paths {
		mgr.GetWebhookServer().Register(path, &admission.Webhook{Handler: byPath[path], LogConstructor: logs.Admissions})
	}
}

// SetupFinalizers serves only gopf's create webhooks, which add its
// finalizer and, when sharded, the shard label (see Options.Finalizers),
// on mgr's webhook server, which must be a *Server made by NewServer, for
// an operator without admission handlers, and keeps their configuration
// in the cluster while the manager runs. Setup does the same for a
// registry that has admission handlers; like Setup, it has the server
// keep its certificates in the Secret of Options.CertSecret, if given.
// gopf.NewManager calls it when Options.Finalizers is FinalizersAlways.
func SetupFinalizers(mgr manager.Manager, reg *handlers.Registry) error {
	srv, ok := mgr.GetWebhookServer().(*Server)
	if !ok {
		return errors.New("gopf: the create webhooks need the manager's webhook server to be made by webhook.NewServer")
	}
	if err := keepCertsInSecret(mgr, srv); err != nil {
		return err
	}
	created, err := serveCreate(mgr, contract.SetOf(reg), srv)
	if err != nil || srv.opts.StaticConfigurations {
		return err
	}
	cm, err := newConfigManager(mgr, srv, nil, created)
	if err != nil {
		return err
	}
	return mgr.Add(cm)
}

// keepCertsInSecret has srv keep its certificates in the Secret of
// Options.CertSecret, if it names one, through a client of mgr's cluster;
// the server makes or reads them there when it starts.
func keepCertsInSecret(mgr manager.Manager, srv *Server) error {
	ref := srv.opts.CertSecret
	if ref == nil {
		return nil
	}
	c, err := clusterClient(mgr, corev1.AddToScheme)
	if err != nil {
		return fmt.Errorf("gopf: a client for the webhook certificate Secret: %w", err)
	}
	srv.certs.setStore(secretStore{c: c, ref: *ref})
	return nil
}

// serveCreate serves the create webhooks (see createHook) of the kinds
// whose new objects may need gopf's finalizer or a shard's label, when srv
// adds finalizers at all, and has srv keep what the shard labels need up
// to date while it serves.
func serveCreate(mgr manager.Manager, set *contract.Set, srv *Server) ([]*createHook, error) {
	if srv == nil || !servesFinalizers(srv.opts) {
		return nil, nil
	}
	op := set.OperatorOf(mgr)
	hooks, err := createHooks(mgr, op, srv.opts.Name)
	if err != nil {
		return nil, err
	}
	for _, h := range hooks {
		mgr.GetWebhookServer().Register(h.path, &admission.Webhook{Handler: h, LogConstructor: logs.Admissions})
	}
	if s := op.CreateShard(); s != nil && len(hooks) > 0 {
		srv.runWhileServing(s.Watch)
	}
	return hooks, nil
}

// clusterClient is a client of the manager's cluster for the types that
// add puts in its scheme, reading straight from the API server: gopf's own
// objects (configurations, its certificate Secret) need no informer.
func clusterClient(mgr manager.Manager, add func(*runtime.Scheme) error) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := add(scheme); err != nil {
		return nil, err
	}
	return client.New(mgr.GetConfig(), client.Options{Scheme: scheme, HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
}

// resolveHooks resolves the kinds of the registrations and names their
// paths and webhooks. configName is the configurations' name, "" if they
// are not managed.
func resolveHooks(mgr manager.Manager, set *contract.Set, regs []*contract.Handler, configName string) ([]*hook, error) {
	var errs []error
	var hooks []*hook
	seen := map[string]*hook{}
	for _, r := range regs {
		gvk, mapping, err := spec.ResolveKind(r, mgr.GetScheme(), mgr.GetRESTMapper())
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
			continue
		}
		h := &hook{
			reg:        r,
			op:         set.OperatorOf(mgr),
			client:     mgr.GetClient(),
			gvk:        gvk,
			resource:   mapping.Resource.Resource,
			namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		}
		id := sanitizeID(r.Options.ID)
		h.path = kindPath(r.Kind == spec.KindMutate, gvk) + "/" + id
		h.name = webhookName(id, gvk, configName)
		if problems := validation.IsDNS1123Subdomain(h.name); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("gopf: %s: webhook name %q: %s (give the handler an ID of lower-case letters, digits and dashes)", r, h.name, strings.Join(problems, "; ")))
			continue
		}
		if other, ok := seen[h.path]; ok {
			errs = append(errs, fmt.Errorf("gopf: %s: its webhook path %s is the same as that of %s (give one of them another ID)", r, h.path, other.reg))
			continue
		}
		seen[h.path] = h
		hooks = append(hooks, h)
	}
	return hooks, errors.Join(errs...)
}

// handles reports whether the handler is for requests with this operation
// and subresource ("" for the object itself).
func (h *hook) handles(op admissionv1.Operation, subResource string) bool {
	o := h.reg.Options
	return slices.Contains(o.Operations, string(op)) && (o.SubResource == "*" || o.SubResource == subResource)
}

// selects reports whether the handler's label and annotation filters and
// its When predicate accept obj (given in the handler's Go type).
func (h *hook) selects(obj client.Object) bool {
	o, ixs := h.reg.Options, h.indexes()
	return spec.MatchMetadata(o.Labels, obj.GetLabels()) && spec.MatchMetadata(o.Annotations, obj.GetAnnotations()) &&
		(o.When == nil || o.When(obj, ixs))
}

// indexes are the operator's indexes, for filters that read them (nil
// before the webhook has an operator).
func (h *hook) indexes() *spec.Indexes {
	if h.op == nil {
		return nil
	}
	return h.op.Indexes
}

// kindPath is the path of all validating or mutating handlers of a kind.
func kindPath(mutating bool, gvk schema.GroupVersionKind) string {
	root := "/validate/"
	if mutating {
		root = "/mutate/"
	}
	group := gvk.Group
	if group == "" {
		group = "core"
	}
	return root + group + "/" + gvk.Version + "/" + strings.ToLower(gvk.Kind)
}

// webhookName names a handler's webhook: <id>.<kind>[.<group>].<config>,
// e.g. check-field.kopfexample.kopf.dev.my-operator.gopf.dev.
func webhookName(id string, gvk schema.GroupVersionKind, configName string) string {
	parts := []string{id, strings.ToLower(gvk.Kind)}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	if configName != "" {
		parts = append(parts, configName)
	} else {
		parts = append(parts, "gopf.dev")
	}
	return strings.Join(parts, ".")
}

// sanitizeID turns a handler id into a DNS label-like string for paths and
// webhook names: lower case, "_" and other characters as "-", "/" as ".".
func sanitizeID(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == '/' || r == '.':
			b.WriteRune('.')
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// Needed reports whether reg has admission handlers, and so needs a webhook
// server.
func Needed(reg *handlers.Registry) bool {
	return len(contract.SetOf(reg).Handlers(spec.KindValidate, spec.KindMutate)) > 0
}
