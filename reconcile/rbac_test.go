package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile/rbac"
)

// rule is a PolicyRule for one group and resource, as Permissions makes
// them.
func rule(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

// rbacScheme knows the built-in kinds and KopfExample.
func rbacScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kopfv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// noop returns a handler that does nothing (a function literal, so that
// handler ids default by handler kind).
func noop[T client.Object]() handlers.HandlerFunc[T] {
	return func(context.Context, T, *handlers.Cause) (any, error) { return nil, nil }
}

// exampleRegistry has create, delete, timer and level handlers on
// KopfExample, the level handler owning ConfigMaps, and an unstructured
// update handler on Deployments named by resource.
func exampleRegistry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, noop[*kopfv1.KopfExample]())
	handlers.OnReconcile(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (ctrlreconcile.Result, error) {
		return ctrlreconcile.Result{}, nil
	}, handlers.Owns(&corev1.ConfigMap{}))
	handlers.OnDelete(reg, noop[*kopfv1.KopfExample]())
	handlers.OnTimer(reg, time.Minute, noop[*kopfv1.KopfExample]())
	handlers.OnUpdate(reg, noop[*unstructured.Unstructured](), handlers.ForResource("deployments.apps"))
	return reg
}

// exampleRules are the rules exampleRegistry needs, offline.
var exampleRules = []rbacv1.PolicyRule{
	rule("", "configmaps", "get", "list", "watch"),
	rule("", "events", "create", "patch"),
	rule("apiextensions.k8s.io", "customresourcedefinitions", "get", "list", "watch"), // offline, KopfExample may not be served yet
	rule("apps", "deployments", "get", "list", "patch", "watch"),
	rule("apps", "deployments/status", "patch"),
	rule("coordination.k8s.io", "leases", "create", "get", "update"),
	rule("events.k8s.io", "events", "create", "patch"),
	rule("kopf.dev", "kopfexamples", "get", "list", "patch", "watch"),
	rule("kopf.dev", "kopfexamples/finalizers", "update"),
	rule("kopf.dev", "kopfexamples/status", "patch"),
}

func TestPermissionsListWhatTheHandlersNeedOnePerResourceSorted(t *testing.T) {
	g := NewWithT(t)
	rules, err := rbac.Permissions(exampleRegistry(), rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(Equal(exampleRules))
}

func TestPermissionsUseTheRESTMapperForExactResourceNames(t *testing.T) {
	g := NewWithT(t)
	// People is a plural the offline guess gets wrong ("persons").
	person := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Person"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(person, person.GroupVersion().WithResource("people"), person.GroupVersion().WithResource("person"), meta.RESTScopeNamespace)
	mapper.Add(kopfv1.GroupVersion.WithKind("KopfExample"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	reg := handlers.NewRegistry()
	handlers.OnReconcile(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (ctrlreconcile.Result, error) {
		return ctrlreconcile.Result{}, nil
	}, handlers.Watches(&corev1.Secret{}, func(context.Context, client.Object) []types.NamespacedName { return nil }))
	handlers.OnEvent(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) error { return nil },
		handlers.ForKind(person.Group, person.Version, person.Kind))

	rules, err := rbac.Permissions(reg, rbacScheme(t), mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElement(rule("", "secrets", "get", "list", "watch")))
	g.Expect(rules).To(ContainElement(rule("example.com", "people", "get", "list", "watch")))
	g.Expect(rules).To(ContainElement(rule("kopf.dev", "kopfexamples", "get", "list", "patch", "watch")))

	guessed, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(guessed).To(ContainElement(rule("example.com", "persons", "get", "list", "watch")), "the documented limit of guessing")
}

func TestPermissionsOfKindsTheClusterDoesNotServeYetGuessTheirNameAndWatchCRDs(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), handlers.ID("make_it"))
	crds := rule("apiextensions.k8s.io", "customresourcedefinitions", "get", "list", "watch")

	rules, err := rbac.Permissions(reg, rbacScheme(t), meta.NewDefaultRESTMapper(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElement(rule("kopf.dev", "kopfexamples", "get", "list", "patch", "watch")))
	g.Expect(rules).To(ContainElement(crds), "the operator waits for the CRD")

	offline, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(offline).To(ContainElement(crds), "offline, a custom kind may not be served yet")

	builtin := handlers.NewRegistry()
	handlers.OnCreate(builtin, noop[*corev1.ConfigMap](), handlers.ID("make_it"))
	rules, err = rbac.Permissions(builtin, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).NotTo(ContainElement(crds), "built-in kinds are always served")

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(kopfv1.GroupVersion.WithKind("KopfExample"), meta.RESTScopeNamespace)
	served, err := rbac.Permissions(reg, rbacScheme(t), mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(ContainElement(crds),
		"where the state of a served custom kind lives is read from its CRD, and the operator may have to wait for it")
	g.Expect(served).To(Equal(offline), "the running check asks for what --print-rbac prints and --check-rbac checks")

	_, err = rbac.Permissions(reg, runtime.NewScheme(), nil)
	g.Expect(err).To(MatchError(ContainSubstring("not in the scheme")))
}

func TestPermissionsResolveUnstructuredHandlersByKindOrResourceName(t *testing.T) {
	for name, tc := range map[string]struct {
		opt  handlers.EventOption
		want schema.GroupResource
		err  string
	}{
		"kind":                      {opt: handlers.ForKind("apps", "v1", "StatefulSet"), want: schema.GroupResource{Group: "apps", Resource: "statefulsets"}},
		"plural.version.group":      {opt: handlers.ForResource("kopfexamples.v1.kopf.dev"), want: schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}},
		"plural.group":              {opt: handlers.ForResource("widgets.example.com"), want: schema.GroupResource{Group: "example.com", Resource: "widgets"}},
		"bare core plural":          {opt: handlers.ForResource("ConfigMaps"), want: schema.GroupResource{Resource: "configmaps"}},
		"bare singular of scheme":   {opt: handlers.ForResource("kopfexample"), want: schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}},
		"bare plural in no kind":    {opt: handlers.ForResource("widgets"), err: `resource "widgets" is not a kind of the scheme`},
		"bare plural, two groups":   {opt: handlers.ForResource("ingresses"), err: `resource "ingresses" is in several API groups`},
		"core wins over the others": {opt: handlers.ForResource("events"), want: schema.GroupResource{Resource: "events"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			reg := handlers.NewRegistry()
			handlers.OnEvent(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) error { return nil }, tc.opt)
			rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			// An event handler only reads.
			g.Expect(rules).To(ContainElement(And(
				HaveField("APIGroups", ConsistOf(tc.want.Group)),
				HaveField("Resources", ConsistOf(tc.want.Resource)),
				HaveField("Verbs", ContainElements("get", "list", "watch")),
			)))
			g.Expect(rules).NotTo(ContainElement(rule(tc.want.Group, tc.want.Resource+"/status", "patch")))
		})
	}
}

func TestPermissionsOfOptionalDeleteHandlersLeaveOutTheFinalizer(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnDelete(reg, noop[*appsv1.Deployment](), handlers.Optional())
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElement(rule("apps", "deployments", "get", "list", "patch", "watch")))
	g.Expect(rules).NotTo(ContainElement(HaveField("Resources", ConsistOf("deployments/finalizers"))))
}

func TestPermissionsOfAdmissionHandlersManageWebhookConfigurations(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Admission[*kopfv1.KopfExample]) error { return nil })
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(Equal([]rbacv1.PolicyRule{
		rule("", "events", "create", "patch"),
		rule("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "create", "delete", "get", "update"),
		rule("admissionregistration.k8s.io", "validatingwebhookconfigurations", "create", "delete", "get", "update"),
		rule("coordination.k8s.io", "leases", "create", "get", "update"),
		rule("events.k8s.io", "events", "create", "patch"),
	}))
}

func TestPermissionsReportBadRegistrations(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, noop[*unstructured.Unstructured]()) // neither ForKind nor ForResource
	_, err := rbac.Permissions(reg, rbacScheme(t), nil)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("needs ForKind or ForResource")))
}

func TestMissingPermissionsIsEmptyWhenEverythingIsGranted(t *testing.T) {
	NewWithT(t).Expect(rbac.MissingPermissions(exampleRules, exampleRules)).To(BeEmpty())
}

func TestMissingPermissionsReportsARemovedRule(t *testing.T) {
	g := NewWithT(t)
	for i := range exampleRules {
		granted := append(append([]rbacv1.PolicyRule{}, exampleRules[:i]...), exampleRules[i+1:]...)
		missing := rbac.MissingPermissions(exampleRules, granted)
		g.Expect(missing).To(HaveLen(len(exampleRules[i].Verbs)), "without rule %d", i)
	}
	granted := append([]rbacv1.PolicyRule{}, exampleRules...)
	granted[len(granted)-1] = rule("kopf.dev", "kopfexamples/status", "get", "update") // patch is gone
	g.Expect(rbac.MissingPermissions(exampleRules, granted)).To(Equal([]string{
		`patch kopfexamples/status in API group "kopf.dev"`,
	}))
	g.Expect(rbac.MissingPermissions(exampleRules, exampleRules[1:])).To(Equal([]string{
		`get configmaps in the core API group ("")`,
		`list configmaps in the core API group ("")`,
		`watch configmaps in the core API group ("")`,
	}))
}

func TestMissingPermissionsHonoursWildcards(t *testing.T) {
	g := NewWithT(t)
	g.Expect(rbac.MissingPermissions(exampleRules, []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	})).To(BeEmpty())
	g.Expect(rbac.MissingPermissions(exampleRules, []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch", "create", "update"}},
	})).To(BeEmpty())
	g.Expect(rbac.MissingPermissions(
		[]rbacv1.PolicyRule{rule("kopf.dev", "kopfexamples/status", "patch"), rule("kopf.dev", "kopfexamples", "patch")},
		[]rbacv1.PolicyRule{{APIGroups: []string{"kopf.dev"}, Resources: []string{"*/status"}, Verbs: []string{"*"}}},
	)).To(Equal([]string{`patch kopfexamples in API group "kopf.dev"`}))
	// A rule limited to some names does not allow list or watch of all.
	g.Expect(rbac.MissingPermissions(
		[]rbacv1.PolicyRule{rule("", "configmaps", "get")},
		[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one"}, Verbs: []string{"get"}}},
	)).To(Equal([]string{`get configmaps in the core API group ("")`}))
	g.Expect(rbac.MissingPermissions(
		[]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/healthz"}, Verbs: []string{"get"}}},
		[]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metr*"}, Verbs: []string{"get"}}},
	)).To(Equal([]string{"get on non-resource URL /healthz"}))
}

func TestClusterRoleYAMLReadsBackAsTheSameRules(t *testing.T) {
	g := NewWithT(t)
	out, err := rbac.ClusterRoleYAML("manager-role-gopf", exampleRules)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: manager-role-gopf\nrules:\n"))
	g.Expect(string(out)).NotTo(ContainSubstring("creationTimestamp"))

	// Several documents, and kinds other than roles, as kustomize prints them.
	docs := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n---\n" + string(out) +
		"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: r\nrules:\n- apiGroups: [x]\n  resources: [things]\n  verbs: [get]\n"
	granted, err := rbac.GrantedRules([]byte(docs))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(granted).To(Equal(append(append([]rbacv1.PolicyRule{}, exampleRules...), rule("x", "things", "get"))))

	_, err = rbac.GrantedRules([]byte("apiVersion: v1\nkind: ConfigMap\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no Role or ClusterRole")))
	_, err = rbac.GrantedRules([]byte("kind: [\n"))
	g.Expect(err).To(HaveOccurred())
}

func TestWithoutLeaderElectionDropsOnlyTheLeaseRule(t *testing.T) {
	got := rbac.WithoutLeaderElection(exampleRules)
	NewWithT(t).Expect(got).To(HaveLen(len(exampleRules) - 1))
	for _, r := range got {
		if strings.Contains(r.Resources[0], "leases") {
			t.Errorf("lease rule left in: %v", r)
		}
	}
}

func TestPermissionsGrantWhatHandlersDeclareWithUses(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnUpdate(reg, noop[*kopfv1.KopfExample](), handlers.Uses(&appsv1.Deployment{}, "create", "patch"))
	handlers.OnEvent(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) error { return nil },
		handlers.Uses(&corev1.Secret{}, "get"))
	jobs := &unstructured.Unstructured{}
	jobs.SetGroupVersionKind(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})
	handlers.OnStartup(reg, func(context.Context, *handlers.Cause) error { return nil },
		handlers.Uses(jobs, "delete"))
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElements(
		rule("apps", "deployments", "create", "patch"),
		rule("", "secrets", "get", "list", "watch"),           // read through the cache
		rule("batch", "jobs", "delete"),                       // an operator-level handler's use
		rule("kopf.dev", "kopfexamples/finalizers", "update"), // created objects may be adopted
	))
}

func TestPermissionsAddNoFinalizerRightsForHandlersThatOnlyRead(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), handlers.Uses(&corev1.ConfigMap{}, "list", "patch"))
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).NotTo(ContainElement(HaveField("Resources", ContainElement("kopfexamples/finalizers"))))
	g.Expect(rules).To(ContainElement(rule("", "configmaps", "get", "list", "patch", "watch")))
}

func TestUsesRejectsWhatIsNotARuleOnObjects(t *testing.T) {
	for name, opt := range map[string]handlers.CreateOption{
		"no object":    handlers.Uses(nil, "get"),
		"no verb":      handlers.Uses(&corev1.ConfigMap{}),
		"a wildcard":   handlers.Uses(&corev1.ConfigMap{}, "*"),
		"unknown verb": handlers.Uses(&corev1.ConfigMap{}, "read"),
	} {
		t.Run(name, func(t *testing.T) {
			reg := handlers.NewRegistry()
			handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), opt)
			_, err := rbac.Permissions(reg, rbacScheme(t), nil)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring("Uses")))
		})
	}
}

func TestPermissionsNameTheHandlerOfAUseOfAKindTheyCannotResolve(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), handlers.ID("maker"), handlers.Uses(&unstructured.Unstructured{}, "create"))
	_, err := rbac.Permissions(reg, rbacScheme(t), nil)
	NewWithT(t).Expect(err).To(MatchError(And(ContainSubstring(`"maker"`), ContainSubstring("Uses"))))
}

func TestMissingRulesGroupTheMissingVerbsOfEachResource(t *testing.T) {
	g := NewWithT(t)
	required := []rbacv1.PolicyRule{
		rule("kopf.dev", "kopfexamples", "get", "list", "patch", "watch"),
		rule("kopf.dev", "kopfexamples/status", "patch"),
		rule("", "events", "create", "patch"),
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}
	granted := []rbacv1.PolicyRule{rule("kopf.dev", "kopfexamples", "get", "list", "watch"), rule("", "events", "create")}
	g.Expect(rbac.MissingRules(required, granted)).To(Equal([]rbacv1.PolicyRule{
		rule("kopf.dev", "kopfexamples", "patch"),
		rule("kopf.dev", "kopfexamples/status", "patch"),
		rule("", "events", "patch"),
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}))
	g.Expect(rbac.MissingRules(required, required)).To(BeEmpty())
}

func TestKubebuilderMarkersWriteTheRulesAsControllerGenReadsThem(t *testing.T) {
	named := rule("coordination.k8s.io", "leases", "get", "update")
	named.ResourceNames = []string{"op-lock"}
	got := rbac.KubebuilderMarkers([]rbacv1.PolicyRule{
		rule("kopf.dev", "kopfexamples/status", "patch", "update"),
		rule("", "events", "create", "patch"),
		named,
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	})
	NewWithT(t).Expect(got).To(Equal(
		"// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=patch;update\n" +
			"// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch\n" +
			"// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,resourceNames=op-lock,verbs=get;update\n" +
			"// +kubebuilder:rbac:urls=/metrics,verbs=get\n"))
}

// A kind chosen by configuration has no Go type: UsesKind and UsesResource
// name it as ForKind and ForResource do, and --print-rbac grants the verbs.
func TestPermissionsGrantWhatHandlersDeclareWithUsesKindAndUsesResource(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnEvent(reg, func(context.Context, *unstructured.Unstructured, *handlers.Cause) error { return nil },
		handlers.ForResource("secrets.v1."), handlers.UsesResource("secrets.v1.", "create", "update", "delete"),
		handlers.UsesKind("apps", "v1", "Deployment", "patch"))
	rules, err := rbac.Permissions(reg, rbacScheme(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rules).To(ContainElements(
		rule("", "secrets", "create", "delete", "get", "list", "update", "watch"),
		rule("apps", "deployments", "patch"),
	))
}

func TestUsesKindAndUsesResourceRejectWhatNamesNoKindOrVerb(t *testing.T) {
	for name, tc := range map[string]struct {
		opt  handlers.CreateOption
		want string
	}{
		"no resource":          {handlers.UsesResource("", "get"), "UsesResource needs a resource name"},
		"no verb":              {handlers.UsesResource("secrets"), "UsesResource needs a resource name and at least one verb"},
		"unknown verb":         {handlers.UsesResource("secrets", "read"), `UsesResource: "read" is not an RBAC verb`},
		"no kind":              {handlers.UsesKind("apps", "v1", "", "get"), "UsesKind needs a version, a kind"},
		"unresolvable":         {handlers.UsesResource("widgets", "get"), `UsesResource "widgets"`},
		"kind with a bad verb": {handlers.UsesKind("", "v1", "Secret", "*"), `UsesKind: "*" is not an RBAC verb`},
	} {
		t.Run(name, func(t *testing.T) {
			reg := handlers.NewRegistry()
			handlers.OnCreate(reg, noop[*kopfv1.KopfExample](), tc.opt)
			_, err := rbac.Permissions(reg, rbacScheme(t), nil)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
