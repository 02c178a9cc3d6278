package rbac

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Verbs gopf uses, by what it does with a kind.
// crds are CustomResourceDefinitions.
var crds = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

var (
	// readVerbs are what the informer cache needs for every kind gopf
	// watches: handled kinds and secondary (Owns, Watches) kinds alike.
	readVerbs = []string{"get", "list", "watch"}
	// eventVerbs post and aggregate Events.
	eventVerbs = []string{"create", "patch"}
	// leaseVerbs are what controller-runtime's leader election does with
	// its Lease.
	leaseVerbs = []string{"get", "create", "update"}
	// webhookConfigVerbs are what the webhook package does with the
	// configurations it manages.
	webhookConfigVerbs = []string{"get", "create", "update", "delete"}
)

// Permissions returns the RBAC rules an operator made of the handlers in reg
// needs, one rule per API group and resource, sorted by group and resource,
// with sorted verbs; the same registry always gives the same rules. They
// are:
//
//   - for every kind with handlers: get, list and watch (the informer
//     cache); for kinds with change, level, timer or daemon handlers also
//     patch on the resource (stored state, finalizer, handler patches) and
//     on <resource>/status (results and state). Event and index handlers
//     only read.
//   - update on the resource for kinds that use gopf's finalizer whose
//     handlers take unstructured objects: gopf adds and removes its
//     finalizer on those with an update of the whole object, which costs
//     the API server less than a patch (where it is not granted, gopf
//     patches instead, after one warning).
//   - update on <resource>/finalizers for kinds that use gopf's finalizer
//     (non-optional delete handlers, timers, daemons), own children (Owns)
//     or have handlers that create objects (Uses with "create"): the API
//     server requires it to set an owner reference with
//     blockOwnerDeletion, as Adopt does, when the
//     OwnerReferencesPermissionEnforcement admission plugin is on.
//   - get, list and watch on the kinds named by Owns and Watches.
//   - what handlers declared with Uses, on the kinds they named; "get" or
//     "list" also get "list" and "watch" (the operator's client reads
//     from the informer cache).
//   - get on customresourcedefinitions for the kinds of change handlers
//     in a group with a dot (the groups CRDs may have): the CRD's status
//     schema says where gopf keeps the state of that kind's objects.
//   - get, list and watch on customresourcedefinitions
//     (apiextensions.k8s.io) when a handled kind is not built in (not in
//     client-go's scheme), or the mapper does not know it (its resource
//     name is then guessed, see below): it may not be served when the
//     operator starts, and the operator then waits for its CRD through a
//     watch of CRDs. Whether the CRD is installed right now does not
//     matter, so that the rules are the same with a mapper (the running
//     check, gopf.CheckPermissions) and without (--print-rbac and
//     --check-rbac), and a role one accepts the other accepts. Also when a
//     handler chooses its kinds with ForCategory or ForKinds.
//   - create and patch on events, in the core group and events.k8s.io.
//   - get, create and update on leases (coordination.k8s.io) for leader
//     election. Deployments usually grant these with a Role in the
//     operator's namespace; see WithoutLeaderElection.
//   - with admission handlers (OnValidate, OnMutate): get, create, update
//     and delete on validating- and mutatingwebhookconfigurations, which
//     gopf keeps up to date.
//
// The kinds a ForCategory or ForKinds handler chooses are not known
// before the operator runs, and change as CRDs come and go, so Permissions
// grants nothing on them (a wildcard rule would grant far more than is
// used). Grant, on each kind the selector is meant to choose, what a
// handler of that kind needs (see above): get, list and watch; patch on
// the kind and its status; update on its finalizers for delete handlers,
// timers and daemons. A chosen kind the operator may not watch stops its
// controller with an error in the operator's log.
//
// What a handler does with its client (creating children, reading
// secrets) is known only as far as it is declared with handlers.Uses.
//
// scheme maps typed handlers' Go types to kinds; nil means client-go's
// scheme (built-in kinds only). mapper maps kinds to resource names. A
// mapper of a reachable cluster (the manager's) gives exact names; a
// ForResource name it does not know is an error. With a nil mapper, Permissions
// works offline: plural resource names are guessed from kind names with
// meta.UnsafeGuessKindToResource (right for the built-in kinds and most
// CRDs, wrong for a CRD with an irregular plural, such as people), and an
// unstructured handler's ForResource name is used as given, as
// "plural.group" or "plural.version.group"; a bare plural or singular is
// looked up among the scheme's kinds (the core group wins) and is an error
// when no kind matches.
func Permissions(reg *handlers.Registry, scheme *runtime.Scheme, mapper meta.RESTMapper) ([]rbacv1.PolicyRule, error) {
	if err := reg.Err(); err != nil {
		return nil, err
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	res := &resolver{scheme: scheme, mapper: mapper}
	need := permissionSet{}
	var errs []error
	set := contract.SetOf(reg)
	for _, r := range set.Handlers(contract.ObjectKinds...) {
		errs = append(errs, need.addHandled(res, r)...)
	}
	for _, r := range set.Handlers() {
		errs = append(errs, need.addUses(res, r)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	need.addOperator(res.lazy, len(set.Handlers(spec.KindValidate, spec.KindMutate)) > 0)
	return need.rules(), nil
}

// addHandled adds what an object handler needs on its kind, and reads on
// the kinds it owns or watches. A handler that chooses its kinds
// (ForCategory, ForKinds) adds nothing: which kinds it chooses is known
// only to the cluster, and changes with it, so the operator watches CRDs
// to find out (res.lazy).
func (s permissionSet) addHandled(res *resolver, r *contract.Handler) []error {
	if r.Options.Kinds != nil {
		res.lazy = true
		return nil
	}
	gr, err := res.handled(r)
	if err != nil {
		return []error{fmt.Errorf("gopf: %s: %w", r, err)}
	}
	s.add("", gr, readVerbs...)
	if r.Kind != spec.KindEvent && r.Kind != spec.KindIndex {
		s.add("", gr, "patch")
		s.add("status", gr, "patch")
		if strings.Contains(gr.Group, ".") {
			// Where the state of a kind that may be a CRD lives is
			// read from its CRD's schema at setup (see placement.go).
			s.add("", crds, "get")
		}
	}
	usesFinalizer := contract.HoldsObjects(r)
	if usesFinalizer && r.Unstructured {
		s.add("", gr, "update")
	}
	if usesFinalizer || len(r.Options.Owned) > 0 || createsObjects(r) {
		s.add("finalizers", gr, "update")
	}
	return s.addSecondary(res, r)
}

// addSecondary adds reads on the kinds a handler owns (Owns) or watches
// (Watches): the informer cache watches them.
func (s permissionSet) addSecondary(res *resolver, r *contract.Handler) []error {
	secondary := make([]client.Object, 0, len(r.Options.Owned)+len(r.Options.Watched))
	secondary = append(secondary, r.Options.Owned...)
	for _, w := range r.Options.Watched {
		secondary = append(secondary, w.Object)
	}
	var errs []error
	for _, obj := range secondary {
		gr, err := res.object(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: watching %T: %w", r, obj, err))
			continue
		}
		s.add("", gr, readVerbs...)
	}
	return errs
}

// addUses adds what a handler declared with Uses.
func (s permissionSet) addUses(res *resolver, r *contract.Handler) []error {
	var errs []error
	for _, use := range r.Options.Uses {
		gr, err := useResource(res, use)
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
			continue
		}
		s.add("", gr, use.Verbs...)
		if slices.Contains(use.Verbs, "get") || slices.Contains(use.Verbs, "list") {
			s.add("", gr, readVerbs...) // reads come from the informer cache
		}
	}
	return errs
}

// addOperator adds what the operator itself needs, whatever its handlers:
// Events and leader election; reads on CRDs when it waits for kinds to be
// served (watchesCRDs); and with admission handlers, the webhook
// configurations.
func (s permissionSet) addOperator(watchesCRDs, admission bool) {
	if watchesCRDs {
		s.add("", crds, readVerbs...)
	}
	s.add("", schema.GroupResource{Resource: "events"}, eventVerbs...)
	s.add("", schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, eventVerbs...)
	s.add("", leases, leaseVerbs...)
	if admission {
		// The webhook package writes both configurations, deleting the one
		// that would be left empty.
		for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
			s.add("", schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: resource}, webhookConfigVerbs...)
		}
	}
}

// useResource resolves the kind a Uses option named.
func useResource(res *resolver, use spec.Use) (schema.GroupResource, error) {
	if use.Resource != "" {
		gr, err := res.resource(use.Resource)
		if err != nil {
			return gr, fmt.Errorf("UsesResource %q: %w", use.Resource, err)
		}
		return gr, nil
	}
	gr, err := res.object(use.Object)
	if err != nil {
		return gr, fmt.Errorf("the Uses option for %T: %w", use.Object, err)
	}
	return gr, nil
}

// createsObjects reports whether a handler declared that it creates
// objects (Uses with "create"), which it may Adopt.
func createsObjects(r *contract.Handler) bool {
	for _, use := range r.Options.Uses {
		if slices.Contains(use.Verbs, "create") {
			return true
		}
	}
	return false
}

// leases is the resource leader election uses.
var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// WithoutLeaderElection returns rules without those on leases
// (coordination.k8s.io). Leader election needs them only in the operator's
// own namespace, and kubebuilder layouts grant them there with a Role
// (config/rbac/leader_election_role.yaml); granting them cluster-wide would
// let the operator take over other controllers' leases. Use it on
// Permissions' rules before printing them as a ClusterRole.
func WithoutLeaderElection(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, rule := range rules {
		if len(rule.APIGroups) == 1 && rule.APIGroups[0] == leases.Group &&
			len(rule.Resources) == 1 && rule.Resources[0] == leases.Resource {
			continue
		}
		out = append(out, rule)
	}
	return out
}

// permissionSet collects verbs per group and resource (with subresource).
type permissionSet map[schema.GroupResource]map[string]bool

func (s permissionSet) add(subresource string, gr schema.GroupResource, verbs ...string) {
	if subresource != "" {
		gr.Resource += "/" + subresource
	}
	if s[gr] == nil {
		s[gr] = map[string]bool{}
	}
	for _, v := range verbs {
		s[gr][v] = true
	}
}

// rules returns one rule per group and resource, sorted.
func (s permissionSet) rules() []rbacv1.PolicyRule {
	keys := make([]schema.GroupResource, 0, len(s))
	for gr := range s {
		keys = append(keys, gr)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Group != keys[j].Group {
			return keys[i].Group < keys[j].Group
		}
		return keys[i].Resource < keys[j].Resource
	})
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, gr := range keys {
		verbs := make([]string, 0, len(s[gr]))
		for v := range s[gr] {
			verbs = append(verbs, v)
		}
		sort.Strings(verbs)
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: verbs})
	}
	return out
}

// resolver finds the resource of a registration or an object, with the
// REST mapper if there is one, by guessing otherwise.
type resolver struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	lazy   bool // a handled kind may not be served when the operator starts
}

// handled returns the resource a registration handles; see spec.ResolveKind,
// which does the same for a running manager. A handled kind that may not be
// served when the operator starts (one that is not built in, served now or
// not) is one the operator may wait for (see lazyKinds), which needs a
// watch on CustomResourceDefinitions: handled records it in res.lazy.
func (res *resolver) handled(r *contract.Handler) (schema.GroupResource, error) {
	o := r.Options
	if r.Unstructured && o.GVK.Empty() {
		return res.resource(o.Resource)
	}
	gvk := o.GVK
	if !r.Unstructured {
		var err error
		if gvk, err = res.gvkOf(r.NewObject()); err != nil {
			return schema.GroupResource{}, err
		}
	}
	gr, served, err := res.lookup(gvk)
	if err != nil {
		return gr, err
	}
	if _, builtIn := clientgoscheme.Scheme.AllKnownTypes()[gvk]; !served || !builtIn {
		res.lazy = true
	}
	return gr, nil
}

// object returns the resource of a typed object (by its Go type) or of an
// unstructured one (by the kind set in it), which the cluster must serve
// if there is a mapper.
func (res *resolver) object(obj client.Object) (schema.GroupResource, error) {
	gvk, err := res.gvkOf(obj)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return res.kind(gvk)
}

func (res *resolver) gvkOf(obj client.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, res.scheme)
	if err != nil {
		return gvk, fmt.Errorf("the Go type %T is not in the scheme (add its package's AddToScheme): %w", obj, err)
	}
	return gvk, nil
}

// kind returns the resource of a kind the cluster serves, or its guessed
// name offline.
func (res *resolver) kind(gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	gr, served, err := res.lookup(gvk)
	if err == nil && !served && res.mapper != nil {
		err = fmt.Errorf("kind %s is not served by the API server (is its CRD installed?)", gvk)
	}
	return gr, err
}

// Lookup returns the resource of a kind from the mapper, or guessed from
// its name when the mapper does not know it or there is none; served says
// whether the kind is known to be served (offline: whether it is built
// in).
func (res *resolver) lookup(gvk schema.GroupVersionKind) (gr schema.GroupResource, served bool, err error) {
	if res.mapper != nil {
		mapping, err := res.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return mapping.Resource.GroupResource(), true, nil
		}
		if !meta.IsNoMatchError(err) {
			return gr, false, fmt.Errorf("kind %s: %w", gvk, err)
		}
	} else {
		_, served = clientgoscheme.Scheme.AllKnownTypes()[gvk]
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource(), served, nil
}

// apiVersionName matches Kubernetes API version names such as v1 and v2beta1.
var apiVersionName = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// resource resolves a ForResource name: "plural", "plural.group" or
// "plural.version.group".
func (res *resolver) resource(name string) (schema.GroupResource, error) {
	full, partial := schema.ParseResourceArg(strings.ToLower(name))
	if res.mapper != nil {
		var gvk schema.GroupVersionKind
		err := errors.New("no match")
		if full != nil {
			gvk, err = res.mapper.KindFor(*full)
		}
		if err != nil {
			if gvk, err = res.mapper.KindFor(partial.WithVersion("")); err != nil {
				return schema.GroupResource{}, fmt.Errorf("resource %q is not served by the API server: %w", name, err)
			}
		}
		return res.kind(gvk)
	}
	if full != nil && apiVersionName.MatchString(full.Version) {
		return full.GroupResource(), nil
	}
	if partial.Group != "" {
		return partial, nil
	}
	groups := map[string]bool{}
	for gvk := range res.scheme.AllKnownTypes() {
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		if plural.Resource == partial.Resource || singular.Resource == partial.Resource {
			groups[gvk.Group] = true
		}
	}
	switch {
	case groups[""]:
		return schema.GroupResource{Resource: pluralOf(res.scheme, "", partial.Resource)}, nil
	case len(groups) == 1:
		for g := range groups {
			return schema.GroupResource{Group: g, Resource: pluralOf(res.scheme, g, partial.Resource)}, nil
		}
	}
	sorted := make([]string, 0, len(groups))
	for g := range groups {
		sorted = append(sorted, g)
	}
	sort.Strings(sorted)
	if len(sorted) > 1 {
		return schema.GroupResource{}, fmt.Errorf("resource %q is in several API groups (%s): name it as %s.<group>", name, strings.Join(sorted, ", "), partial.Resource)
	}
	return schema.GroupResource{}, fmt.Errorf("resource %q is not a kind of the scheme: name it as %s.<group>, or resolve it with a cluster's REST mapper", name, partial.Resource)
}

// pluralOf returns the plural of a resource name given as plural or
// singular, among the scheme's kinds of group.
func pluralOf(scheme *runtime.Scheme, group, name string) string {
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Group != group {
			continue
		}
		if plural, singular := meta.UnsafeGuessKindToResource(gvk); singular.Resource == name {
			return plural.Resource
		}
	}
	return name
}

// MissingPermissions returns, in the order of required and one line each,
// what granted lacks of required: every verb on a resource (or non-resource
// URL) that no granted rule allows, such as
//
//	patch kopfexamples/status in API group "kopf.dev"
//
// A granted rule allows a request the way the API server's RBAC authorizer
// decides it: "*" in apiGroups, resources or verbs matches anything,
// "*/status" matches the status subresource of every resource, and a rule
// with resourceNames allows only requests for those names (so it does not
// cover a required rule without names). Roles and ClusterRoles are not told
// apart: namespaces are not considered. An empty result means nothing is
// missing.
func MissingPermissions(required []rbacv1.PolicyRule, granted []rbacv1.PolicyRule) []string {
	access := missingAccess(required, granted)
	missing := make([]string, 0, len(access))
	for _, a := range access {
		missing = append(missing, a.String())
	}
	return missing
}

// MissingRules is MissingPermissions as rules: one per API group, resource
// and names (or per non-resource URL), with the verbs that granted lacks,
// ready for ClusterRoleYAML or KubebuilderMarkers.
func MissingRules(required []rbacv1.PolicyRule, granted []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	index := map[string]int{}
	for _, a := range missingAccess(required, granted) {
		key := fmt.Sprintf("%s|%s|%s|%s", a.group, a.resource, a.name, a.url)
		i, ok := index[key]
		if !ok {
			i = len(rules)
			index[key] = i
			r := rbacv1.PolicyRule{}
			if a.url != "" {
				r.NonResourceURLs = []string{a.url}
			} else {
				r.APIGroups, r.Resources = []string{a.group}, []string{a.resource}
				if a.name != "" {
					r.ResourceNames = []string{a.name}
				}
			}
			rules = append(rules, r)
		}
		rules[i].Verbs = append(rules[i].Verbs, a.verb)
	}
	return rules
}

// access is one request a rule allows: a verb on a resource (with a name,
// or all) in an API group, or on a non-resource URL.
type access struct {
	verb, group, resource, name, url string
}

func (a access) String() string {
	if a.url != "" {
		return fmt.Sprintf("%s on non-resource URL %s", a.verb, a.url)
	}
	return describe(a.verb, a.group, a.resource, a.name)
}

// missingAccess returns, in the order of required and once each, the
// requests of required that no granted rule allows.
func missingAccess(required []rbacv1.PolicyRule, granted []rbacv1.PolicyRule) []access {
	var missing []access
	seen := map[access]bool{}
	report := func(a access) {
		if !seen[a] {
			seen[a] = true
			missing = append(missing, a)
		}
	}
	for _, req := range required {
		for _, verb := range req.Verbs {
			for _, url := range req.NonResourceURLs {
				if !anyRule(granted, func(g rbacv1.PolicyRule) bool { return matches(g.Verbs, verb) && urlMatches(g.NonResourceURLs, url) }) {
					report(access{verb: verb, url: url})
				}
			}
			for _, group := range req.APIGroups {
				for _, resource := range req.Resources {
					names := req.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						ok := anyRule(granted, func(g rbacv1.PolicyRule) bool {
							return matches(g.Verbs, verb) && matches(g.APIGroups, group) &&
								resourceMatches(g.Resources, resource) && nameMatches(g.ResourceNames, name)
						})
						if !ok {
							report(access{verb: verb, group: group, resource: resource, name: name})
						}
					}
				}
			}
		}
	}
	return missing
}

func describe(verb, group, resource, name string) string {
	s := fmt.Sprintf("%s %s", verb, resource)
	if name != "" {
		s += fmt.Sprintf(" named %q", name)
	}
	if group == "" {
		return s + ` in the core API group ("")`
	}
	return s + fmt.Sprintf(" in API group %q", group)
}

func anyRule(rules []rbacv1.PolicyRule, ok func(rbacv1.PolicyRule) bool) bool {
	for _, r := range rules {
		if ok(r) {
			return true
		}
	}
	return false
}

// matches reports whether list holds want or "*".
func matches(list []string, want string) bool {
	for _, s := range list {
		if s == "*" || s == want {
			return true
		}
	}
	return false
}

// resourceMatches is matches plus "*/<subresource>".
func resourceMatches(list []string, want string) bool {
	if matches(list, want) {
		return true
	}
	_, sub, ok := strings.Cut(want, "/")
	return ok && matches(list, "*/"+sub)
}

// nameMatches: a rule without names allows every name; one with names
// allows only those, and never a request for all objects (name "").
func nameMatches(names []string, want string) bool {
	if len(names) == 0 {
		return true
	}
	if want == "" {
		return false
	}
	return matches(names, want)
}

// urlMatches allows exact URLs, "*", and prefixes ending in "*".
func urlMatches(list []string, want string) bool {
	for _, s := range list {
		if s == "*" || s == want || strings.HasSuffix(s, "*") && strings.HasPrefix(want, strings.TrimSuffix(s, "*")) {
			return true
		}
	}
	return false
}

// ClusterRoleYAML returns a ClusterRole named name holding rules, as YAML
// ready for kubectl apply or a kustomization.
func ClusterRoleYAML(name string, rules []rbacv1.PolicyRule) ([]byte, error) {
	role := rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}
	out, err := yaml.Marshal(role)
	if err != nil {
		return nil, fmt.Errorf("writing ClusterRole %s: %w", name, err)
	}
	return out, nil
}

// GrantedRules returns the rules of every Role and ClusterRole in
// manifests: YAML or JSON, one or several documents separated by "---"
// (such as `kustomize build config/rbac`). Other kinds are skipped; it is
// an error if there is no Role or ClusterRole at all. The rules of
// aggregated ClusterRoles (aggregationRule) are those written in them, not
// what the API server aggregates.
func GrantedRules(manifests []byte) ([]rbacv1.PolicyRule, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	var rules []rbacv1.PolicyRule
	roles := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		var role struct {
			metav1.TypeMeta `json:",inline"`
			Rules           []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &role); err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		gv, _ := schema.ParseGroupVersion(role.APIVersion)
		if gv.Group != rbacv1.GroupName || role.Kind != "Role" && role.Kind != "ClusterRole" {
			continue
		}
		roles++
		rules = append(rules, role.Rules...)
	}
	if roles == 0 {
		return nil, errors.New("no Role or ClusterRole found in the manifests")
	}
	return rules, nil
}

// KubebuilderMarkers returns rules as the kubebuilder RBAC markers that
// make controller-gen write them into config/rbac/role.yaml, one line per
// rule, for a project that keeps its RBAC in markers:
//
//	// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=patch
//
// The core API group is written "core", as kubebuilder writes it.
func KubebuilderMarkers(rules []rbacv1.PolicyRule) string {
	var b strings.Builder
	for _, r := range rules {
		b.WriteString("// +kubebuilder:rbac:")
		if len(r.NonResourceURLs) > 0 {
			fmt.Fprintf(&b, "urls=%s,verbs=%s\n", strings.Join(r.NonResourceURLs, ";"), strings.Join(r.Verbs, ";"))
			continue
		}
		groups := slices.Clone(r.APIGroups)
		for i, g := range groups {
			if g == "" {
				groups[i] = "core"
			}
		}
		fmt.Fprintf(&b, "groups=%s,resources=%s", strings.Join(groups, ";"), strings.Join(r.Resources, ";"))
		if len(r.ResourceNames) > 0 {
			fmt.Fprintf(&b, ",resourceNames=%s", strings.Join(r.ResourceNames, ";"))
		}
		fmt.Fprintf(&b, ",verbs=%s\n", strings.Join(r.Verbs, ";"))
	}
	return b.String()
}

// SelfRules asks the API server, with a SelfSubjectRulesReview, which rules
// the user of c holds in namespace: those of its ClusterRoles (bound
// cluster-wide) and of its Roles there. A namespace without RoleBindings
// (one that does not exist will do) gives the rules that hold in every
// namespace. incomplete is the review's word that an authorizer besides
// RBAC may allow more than the rules say.
func SelfRules(ctx context.Context, c client.Client, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error) {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	if err := c.Create(ctx, review); err != nil {
		return nil, false, fmt.Errorf("asking the API server for the operator's permissions: %w", err)
	}
	for _, r := range review.Status.ResourceRules {
		rules = append(rules, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, r := range review.Status.NonResourceRules {
		rules = append(rules, rbacv1.PolicyRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
	}
	return rules, review.Status.Incomplete, nil
}
