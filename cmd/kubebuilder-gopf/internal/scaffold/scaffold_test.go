package scaffold

import (
	"go/parser"
	"go/token"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
)

// resourceOf is a PROJECT resource of a v1 kind the project does not
// define: a built-in one (core) or one from another module.
func resourceOf(group, kind, domain, path string, core bool) protocol.Resource {
	return protocol.Resource{Group: group, Version: "v1", Kind: kind, Domain: domain, Path: path, Controller: true, Core: core, External: !core}
}

// goV4Controller is go/v4's controller file of a kind, as far as gopf reads it.
func goV4Controller(pkg, kind string) string {
	return "package " + pkg + "\n\ntype " + kind + "Reconciler struct{}\n"
}

func testOpts() Options {
	return Options{Getenv: func(string) string { return "" }, Year: 2026, Notes: io.Discard}
}

// wiredMain is goV4Main after init.
func wiredMain(t *testing.T) string {
	t.Helper()
	m, err := addGopf(goV4Main, "example.com/demo")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkGo fails the test for response files that are not gofmt'ed Go.
func checkGo(t *testing.T, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), p, c, parser.ParseComments); err != nil {
			t.Errorf("%s does not parse: %v\n%s", p, err, c)
		}
		if f, err := formatGo(p, c); err != nil || f != c {
			t.Errorf("%s is not gofmt'ed", p)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Handlers on a kind the project does not define must not take over every
// object of that kind in the cluster: they select by a label the user
// fills in, the delete handler is optional (no finalizer on others'
// objects), RBAC asks for status only where the kind has one, and the test
// replaces go/v4's empty spec with one that runs the handlers.
func TestCreateAPIForBuiltInKindSelectsItsObjects(t *testing.T) {
	for _, tt := range []struct {
		group, kind, path, plural, variable string
		hasStatus                           bool
	}{
		{"apps", "Deployment", "k8s.io/api/apps/v1", "deployments", "deployment", true},
		{"core", "ConfigMap", "k8s.io/api/core/v1", "configmaps", "configMap", false},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			lower := strings.ToLower(tt.kind)
			goV4Test := "package controller\n\nvar _ = Describe(\"" + tt.kind + " Controller\", func() {})\n"
			req := &protocol.Request{
				APIVersion: protocol.APIVersion, Command: protocol.CommandCreateAPI,
				Args: []string{"--group", tt.group, "--version", "v1", "--kind", tt.kind, "--resource=false", "--controller"},
				Config: &protocol.Config{Domain: "example.com", Repo: "example.com/demo", Resources: []protocol.Resource{
					resourceOf(tt.group, tt.kind, "", tt.path, true),
				}},
				Universe: map[string]string{
					mainPath: wiredMain(t),
					"internal/controller/" + lower + "_controller.go":      goV4Controller("controller", tt.kind),
					"internal/controller/" + lower + "_controller_test.go": goV4Test,
				},
			}
			resp := Handle(req, testOpts())
			if resp.Error {
				t.Fatal(resp.ErrorMsgs)
			}
			checkGo(t, resp.Universe)
			h := resp.Universe["internal/controller/"+lower+"_controller.go"]
			alias := importAlias(tt.group, "v1")
			for _, s := range []string{
				alias + ` "` + tt.path + `"`,
				"resources=" + tt.plural + ",verbs=get;list;watch;patch",
				tt.variable + " *" + alias + "." + tt.kind,
				`Selector = handlers.Labels{"example.com/managed": "true"}`,
				"handlers.OnCreate(reg, create" + tt.kind + ", " + tt.variable + "Selector)",
				"handlers.OnDelete(reg, delete" + tt.kind + ", " + tt.variable + "Selector, handlers.Optional())",
				"handlers.OnReconcile(reg, reconcile" + tt.kind + ", " + tt.variable + "Selector)",
			} {
				if !strings.Contains(h, s) {
					t.Errorf("handlers lack %q:\n%s", s, h)
				}
			}
			if got := strings.Contains(h, tt.plural+"/status"); got != tt.hasStatus {
				t.Errorf("RBAC on %s/status: %v, want %v:\n%s", tt.plural, got, tt.hasStatus, h)
			}
			for _, s := range []string{tt.kind + "Status", "spec"} {
				if strings.Contains(h, s) {
					t.Errorf("handlers of a built-in kind talk of %q:\n%s", s, h)
				}
			}
			test := resp.Universe["internal/controller/"+lower+"_controller_test.go"]
			for _, s := range []string{"Register" + tt.kind + "Handlers(reg)", "k8sClient.Create(ctx, " + tt.variable + ")",
				`map[string]string{"example.com/managed": "true"}`, `HaveSuffix("/last-handled-configuration")`} {
				if !strings.Contains(test, s) {
					t.Errorf("the test lacks %q:\n%s", s, test)
				}
			}
			if !strings.Contains(resp.Universe[mainPath], "controller.Register"+tt.kind+"Handlers(reg)") {
				t.Errorf("main.go:\n%s", resp.Universe[mainPath])
			}
		})
	}
}

func TestCreateAPIAndWebhookInMultiGroupProject(t *testing.T) {
	cfg := &protocol.Config{Domain: "example.com", Repo: "example.com/demo", MultiGroup: true, Resources: []protocol.Resource{
		{
			Group: "db", Version: "v1", Kind: "Database", Domain: "example.com", Path: "example.com/demo/api/db/v1",
			API: &protocol.API{Namespaced: false}, Controller: true,
		},
	}}
	api := Handle(&protocol.Request{
		Command: protocol.CommandCreateAPI, Config: cfg,
		Args: []string{"--group", "db", "--version", "v1", "--kind", "Database"},
		Universe: map[string]string{
			mainPath: wiredMain(t),
			"internal/controller/db/database_controller.go": goV4Controller("db", "Database"),
			"internal/controller/db/suite_test.go":          "package db\n",
			"hack/boilerplate.go.txt":                       "/*\nCopyright YEAR The Demo Authors.\n*/",
		},
	}, testOpts())
	if api.Error {
		t.Fatal(api.ErrorMsgs)
	}
	checkGo(t, api.Universe)
	if got := strings.Join(sortedKeys(api.Universe), " "); got != "cmd/main.go internal/controller/db/database_controller.go internal/controller/db/database_controller_test.go" {
		t.Errorf("writes %s", got)
	}
	h := api.Universe["internal/controller/db/database_controller.go"]
	if !strings.HasPrefix(h, "/*\nCopyright 2026 The Demo Authors.\n*/\n\npackage db\n") || !strings.Contains(h, `dbv1 "example.com/demo/api/db/v1"`) {
		t.Errorf("handlers file:\n%s", h)
	}
	if test := api.Universe["internal/controller/db/database_controller_test.go"]; strings.Contains(test, `Namespace: "default"`) {
		t.Errorf("a cluster-scoped kind's test sets a namespace:\n%s", test)
	}
	main := api.Universe[mainPath]
	if !strings.Contains(main, "dbcontroller.RegisterDatabaseHandlers(reg)") || strings.Contains(main, "DatabaseReconciler") {
		t.Errorf("main.go:\n%s", main)
	}

	hook := Handle(&protocol.Request{
		Command: protocol.CommandCreateWebhook, Config: cfg,
		Args: []string{"--group", "db", "--version", "v1", "--kind", "Database", "--programmatic-validation"},
		Universe: map[string]string{
			mainPath: main,
			"internal/webhook/db/v1/database_webhook.go":      "package v1\n\nfunc SetupDatabaseWebhookWithManager() {}\n",
			"internal/webhook/db/v1/database_webhook_test.go": "package v1\n\nvar _ = DatabaseValidator{}\n",
			"internal/webhook/db/v1/webhook_suite_test.go":    "package v1\n\nvar _ = SetupDatabaseWebhookWithManager(mgr)\n",
		},
	}, testOpts())
	if hook.Error {
		t.Fatal(hook.ErrorMsgs)
	}
	checkGo(t, hook.Universe)
	if !strings.Contains(hook.Universe[mainPath], "webhookdbv1.RegisterDatabaseWebhooks(reg)") || strings.Contains(hook.Universe[mainPath], "SetupDatabaseWebhookWithManager") {
		t.Errorf("main.go:\n%s", hook.Universe[mainPath])
	}
	suite := hook.Universe["internal/webhook/db/v1/webhook_suite_test.go"]
	if !strings.Contains(suite, `filepath.Join("..", "..", "..", "..", "config", "crd", "bases")`) || !strings.Contains(suite, "RegisterDatabaseWebhooks(reg)") {
		t.Errorf("suite:\n%s", suite)
	}
	if strings.Contains(hook.Universe["internal/webhook/db/v1/database_webhook.go"], "OnMutate") {
		t.Error("validation only, yet a mutating handler")
	}
}

func TestWebhookSuiteRegistersEveryGopfKindOfThePackage(t *testing.T) {
	cfg := &protocol.Config{Domain: "example.com", Repo: "example.com/demo", Resources: []protocol.Resource{
		{Group: "db", Version: "v1", Kind: "Database", API: &protocol.API{Namespaced: true}, Domain: "example.com", Path: "example.com/demo/api/v1"},
		{Group: "db", Version: "v1", Kind: "Table", API: &protocol.API{Namespaced: true}, Domain: "example.com", Path: "example.com/demo/api/v1"},
	}}
	main, _, _ := ensureImport(wiredMain(t), "example.com/demo/internal/webhook/v1", "webhookv1")
	main, _ = registerCall(main, markerWebhooks, "webhookv1.RegisterDatabaseWebhooks(reg)")
	resp := Handle(&protocol.Request{
		Command: protocol.CommandCreateWebhook, Config: cfg,
		Args: []string{"--group", "db", "--version", "v1", "--kind", "Table", "--defaulting"},
		Universe: map[string]string{
			mainPath: main,
			"internal/webhook/v1/database_webhook.go":   "package v1\n\nfunc RegisterDatabaseWebhooks(reg *handlers.Registry) {}\n",
			"internal/webhook/v1/table_webhook.go":      "package v1\n\nfunc SetupTableWebhookWithManager() {}\n",
			"internal/webhook/v1/webhook_suite_test.go": "package v1\n\n// " + webhookSuiteMarker + "\n",
		},
	}, testOpts())
	if resp.Error {
		t.Fatal(resp.ErrorMsgs)
	}
	checkGo(t, resp.Universe)
	suite := resp.Universe["internal/webhook/v1/webhook_suite_test.go"]
	if !strings.Contains(suite, "RegisterDatabaseWebhooks(reg)\n\tRegisterTableWebhooks(reg)") || strings.Count(suite, "dbv1.AddToScheme") != 1 {
		t.Errorf("suite:\n%s", suite)
	}
	if !strings.Contains(resp.Universe[mainPath], "webhookv1.RegisterDatabaseWebhooks(reg)\n\twebhookv1.RegisterTableWebhooks(reg)") {
		t.Errorf("main.go:\n%s", resp.Universe[mainPath])
	}
}

func TestKeepSelectsTheFilesThePluginReads(t *testing.T) {
	for p, want := range map[string]bool{
		"go.mod": true, "cmd/main.go": true, "Makefile": true, "PROJECT": true, "hack/boilerplate.go.txt": true,
		"internal/controller/database_controller.go": true, "internal/webhook/v1/webhook_suite_test.go": true,
		// edit tidies go.mod against the project's Go files.
		"go.sum": true, "api/v1/database_types.go": true, "cmd/other.go": true,
		"bin/controller-gen": false, ".git/index": false, "bin/tools/x.go": false, "vendor/a/b.go": false,
		"internal/controller/notes.md": false, "config/crd/bases/db.yaml": false,
	} {
		if Keep(p) != want {
			t.Errorf("Keep(%q) = %v", p, !want)
		}
	}
}
