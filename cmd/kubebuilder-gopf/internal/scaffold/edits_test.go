package scaffold

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
)

func TestParseArgsReadsKubebuilderStyleFlags(t *testing.T) {
	got := parseArgs([]string{"--group", "db", "--resource", "--controller=false", "--kind", "Database", "stray", "--namespaced"})
	want := flagValues{"group": "db", "resource": "true", "controller": "false", "kind": "Database", "namespaced": "true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !got.bool("resource") || got.bool("controller") || got.bool("missing") || !got.has("controller") {
		t.Error("bool/has disagree with the flags")
	}
}

func TestGoModEdits(t *testing.T) {
	const single = "module example.com/demo\n\ngo 1.26.0\n\nrequire sigs.k8s.io/controller-runtime v0.24.1\n"
	const block = "module example.com/demo\n\nrequire (\n\tgithub.com/gopf-dev/gopf v0.1.0 // indirect\n\tk8s.io/api v0.37.0\n)\n\nreplace (\n\tgithub.com/gopf-dev/gopf => ../old\n)\n"

	out := setGopfReplace(setGopfRequire(single, "v0.2.0"), "/src/my gopf")
	if requiredGopf(out) != "v0.2.0" || replacedGopf(out) != `"/src/my gopf"` {
		t.Errorf("added directives not found:\n%s", out)
	}
	if !strings.HasPrefix(out, single) {
		t.Errorf("the original content changed:\n%s", out)
	}

	out = setGopfReplace(setGopfRequire(block, "v0.3.0"), "../new")
	want := "module example.com/demo\n\nrequire (\n\tgithub.com/gopf-dev/gopf v0.3.0\n\tk8s.io/api v0.37.0\n)\n\nreplace (\n\tgithub.com/gopf-dev/gopf => ../new\n)\n"
	if out != want {
		t.Errorf("block edit:\n%s\nwant\n%s", out, want)
	}

	for in, want := range map[string]string{"gopf": "./gopf", "../gopf": "../gopf", "/abs": "/abs", ".": "."} {
		if got, _ := localReplacePath(in); got != want {
			t.Errorf("localReplacePath(%q) = %q, want %q", in, got, want)
		}
	}
	for v, ok := range map[string]bool{"v1.2.3": true, "v0.0.0-20250101000000-abcdef123456": true, "latest": false, "1.2.3": false, "v1.2": false} {
		if validVersion(v) != ok {
			t.Errorf("validVersion(%q) = %v", v, !ok)
		}
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{
		"database": "databases", "policy": "policies", "gateway": "gateways", "class": "classes", "box": "boxes", "mesh": "meshes",
	} {
		if got := plural(in); got != want {
			t.Errorf("plural(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Database": "database", "DNSRecord": "dnsRecord", "URL": "url", "Client": "clientObj", "Map": "mapObj"} {
		if got := (&kind{Kind: in}).Var(); got != want {
			t.Errorf("Var(%q) = %q, want %q", in, got, want)
		}
	}
	if got := importAlias("my-group.example.com", "v1beta1"); got != "mygroupv1beta1" {
		t.Errorf("importAlias = %q", got)
	}
}

func TestResolveKindForOwnCoreAndExternalKinds(t *testing.T) {
	p := &project{}
	p.Domain, p.Repo = "example.com", "example.com/demo"
	own, err := p.resolveKind(flagValues{"group": "db", "version": "v1", "kind": "Policy"})
	if err != nil {
		t.Fatal(err)
	}
	if own.QualifiedGroup != "db.example.com" || own.Plural != "policies" || own.APIPath != "example.com/demo/api/v1" ||
		own.APIAlias != "dbv1" || !own.Own || !own.Namespaced {
		t.Errorf("own kind: %+v", own)
	}

	p.MultiGroup = true
	multi, _ := p.resolveKind(flagValues{"group": "db", "version": "v1", "kind": "Policy"})
	if multi.APIPath != "example.com/demo/api/db/v1" {
		t.Errorf("multi-group API path %q", multi.APIPath)
	}

	p.Resources = append(p.Resources,
		resourceOf("core", "Pod", "", "k8s.io/api/core/v1", true),
		resourceOf("apps", "Deployment", "", "k8s.io/api/apps/v1", true),
		resourceOf("cert-manager", "Certificate", "io", "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1", false))
	for _, tt := range []struct{ group, kind, rbac, pathGroup, plural string }{
		{"core", "Pod", `""`, "core", "pods"},
		{"apps", "Deployment", "apps", "apps", "deployments"},
		{"cert-manager", "Certificate", "cert-manager.io", "cert-manager.io", "certificates"},
	} {
		k, err := p.resolveKind(flagValues{"group": tt.group, "version": "v1", "kind": tt.kind})
		if err != nil {
			t.Fatal(err)
		}
		if k.RBACGroup() != tt.rbac || k.PathGroup() != tt.pathGroup || k.Plural != tt.plural || k.Own {
			t.Errorf("%s: rbac %s, path %s, plural %s, own %v", tt.kind, k.RBACGroup(), k.PathGroup(), k.Plural, k.Own)
		}
	}
}

func TestPatchMakefileIsIdempotentAndSaysWhatItCouldNotDo(t *testing.T) {
	goV4 := "test: setup-envtest\n\tKUBEBUILDER_ASSETS=\"" + goV4AssetsExpr + "\" go test ./...\n\n" +
		".PHONY: setup-envtest\nsetup-envtest: envtest ## Download.\n\t@echo hi\n\t@\"$(ENVTEST)\" use x || { \\\n\t\texit 1; \\\n\t}\n\n.PHONY: envtest\n"
	out, todo := patchMakefile(goV4)
	if len(todo) != 0 {
		t.Errorf("todo: %v", todo)
	}
	for _, s := range []string{gopfSetupEnvtestRule + "\n" + gopfSetupEnvtestCmd + "\n\n.PHONY: envtest\n", gopfAssetsExpr, "GOPF_SETUP_ENVTEST ="} {
		if !strings.Contains(out, s) {
			t.Errorf("patched Makefile lacks %q:\n%s", s, out)
		}
	}
	if again, todo := patchMakefile(out); again != out || len(todo) != 0 {
		t.Error("patching twice changes the Makefile")
	}
	custom, todo := patchMakefile("all:\n\tgo build ./...\n")
	if len(todo) != 2 || !strings.Contains(custom, "GOPF_SETUP_ENVTEST =") {
		t.Errorf("a custom Makefile: todo %v\n%s", todo, custom)
	}
}

const goV4Main = `package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	dbv1 "example.com/demo/api/v1"
	dbcontroller "example.com/demo/internal/controller/db"
	webhookdbv1 "example.com/demo/internal/webhook/db/v1"
	// +kubebuilder:scaffold:imports
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	mgr, _ := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	_ = dbv1.AddToScheme
	if err := (&dbcontroller.DatabaseReconciler{
		Client: mgr.GetClient(),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Failed to create controller", "controller", "database")
		os.Exit(1)
	}
	if err := (&dbcontroller.TableReconciler{}).SetupWithManager(mgr); err != nil {
		os.Exit(1)
	}
	// nolint:goconst
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := webhookdbv1.SetupDatabaseWebhookWithManager(mgr); err != nil {
			os.Exit(1)
		}
	}
	// nolint:goconst
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := webhookdbv1.SetupTableWebhookWithManager(mgr); err != nil {
			os.Exit(1)
		}
	}
	// +kubebuilder:scaffold:builder
}
`

func TestMainEditsRemoveOnlyTheKindsSetup(t *testing.T) {
	wired, err := addGopf(goV4Main, "example.com/demo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := removeReconcilerSetup(wired, "Database")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "DatabaseReconciler") || !strings.Contains(out, "TableReconciler") {
		t.Errorf("removing the Database Reconciler:\n%s", out)
	}
	out, err = removeWebhookSetup(out, "Database")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "SetupDatabaseWebhookWithManager") || !strings.Contains(out, "SetupTableWebhookWithManager") ||
		strings.Count(out, "nolint:goconst") != 1 || strings.Count(out, `os.Getenv("ENABLE_WEBHOOKS") != "false"`) != 2 {
		t.Errorf("removing the Database webhook:\n%s", out)
	}
	out, name, err := ensureImport(out, "example.com/demo/internal/controller/db", "dbcontroller")
	if err != nil || name != "dbcontroller" {
		t.Fatalf("ensureImport: %q, %v", name, err)
	}
	out, err = registerCall(out, markerHandlers, name+".RegisterDatabaseHandlers(reg)")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := registerCall(out, markerHandlers, name+".RegisterDatabaseHandlers(reg)"); again != out {
		t.Error("registering twice changes main.go")
	}
	if _, err := formatGo("main.go", out); err != nil {
		t.Error(err)
	}
	if again, err := addGopf(out, "example.com/demo"); err != nil || again != out {
		t.Errorf("wiring twice changes main.go (%v)", err)
	}

	if _, err := addGopf("package main\n\nfunc main() {}\n", "example.com/demo"); err == nil || !strings.Contains(err.Error(), "Add gopf by hand") {
		t.Errorf("a main.go without markers: %v", err)
	}
}

func TestEnsureImportAddsWithAliasOnlyWhenMissing(t *testing.T) {
	src, name, err := ensureImport(goV4Main, "example.com/demo/api/v1", "other")
	if err != nil || name != "dbv1" || src != goV4Main {
		t.Errorf("an existing import: %q, %v", name, err)
	}
	src, name, err = ensureImport("package main\n\nimport (\n\t\"os\"\n)\n", "example.com/x/internal/controller", "")
	if err != nil || name != "controller" || !strings.Contains(src, "\t\"example.com/x/internal/controller\"\n)") {
		t.Errorf("a new import without marker: %q, %v\n%s", name, err, src)
	}
}

func TestWhichGopfTheProjectGets(t *testing.T) {
	const bare = "module example.com/demo\n"
	const pinned = "module example.com/demo\n\nrequire github.com/gopf-dev/gopf v0.3.0\n"
	tests := []struct {
		name                  string
		gomod                 string
		args                  []string
		env                   map[string]string
		build, checkout       string
		wantVersion, wantRepl string
		wantErr               string
	}{
		{name: "flag", gomod: bare, args: []string{"--gopf-version", "v0.5.0"}, wantVersion: "v0.5.0"},
		{name: "environment", gomod: bare, env: map[string]string{"GOPF_VERSION": "v0.6.0", "GOPF_REPLACE": "../gopf"}, wantVersion: "v0.6.0", wantRepl: "../gopf"},
		{name: "flag over environment", gomod: bare, args: []string{"--gopf-replace", "x"}, env: map[string]string{"GOPF_REPLACE": "../gopf"}, wantVersion: PlaceholderVersion, wantRepl: "./x"},
		{name: "release build", gomod: bare, build: "v0.4.0", wantVersion: "v0.4.0"},
		{name: "dirty build is no release", gomod: bare, build: "v0.4.0+dirty", wantErr: "which gopf"},
		{name: "checkout build", gomod: bare, build: "(devel)", checkout: "/src/gopf", wantVersion: PlaceholderVersion, wantRepl: "/src/gopf"},
		{name: "existing requirement stays", gomod: pinned, build: "v0.4.0", checkout: "/src/gopf", wantVersion: "v0.3.0"},
		{name: "nothing known", gomod: bare, wantErr: "which gopf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOpts()
			opts.BuildVersion, opts.Checkout = tt.build, tt.checkout
			opts.Getenv = func(name string) string { return tt.env[name] }
			s := &session{req: &protocol.Request{}, opts: opts, flags: parseArgs(tt.args)}
			out, err := s.gopfGoMod(tt.gomod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if requiredGopf(out) != tt.wantVersion || replacedGopf(out) != tt.wantRepl {
				t.Errorf("require %q replace %q, want %q %q\n%s", requiredGopf(out), replacedGopf(out), tt.wantVersion, tt.wantRepl, out)
			}
		})
	}
}

// main.go as an earlier version of the plugin wired it: SetupWithManager
// and then webhook.Setup, which registered every admission path twice.
const doublyWiredMain = `package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/handlers"
	gopfwebhook "github.com/gopf-dev/gopf/webhook"
	// +kubebuilder:scaffold:imports
)

var setupLog = ctrl.Log

func main() {
	var mgr ctrl.Manager
	gopfRegistry := handlers.NewRegistry()
	if err := gopf.SetupWithManager(mgr, gopfRegistry); err != nil {
		setupLog.Error(err, "Failed to set up the gopf handlers")
		os.Exit(1)
	}
	if err := gopfwebhook.Setup(mgr, gopfRegistry); err != nil {
		setupLog.Error(err, "Failed to set up the gopf admission handlers")
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder
}

func registerHandlers(reg *handlers.Registry) {
	// +gopf:scaffold:handlers
}
`

func TestEditRemovesTheSecondWebhookSetupOfEarlierScaffolds(t *testing.T) {
	out, err := addGopf(doublyWiredMain, "example.com/demo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "gopfwebhook") || !strings.Contains(out, "gopf.SetupWithManager(mgr, gopfRegistry)") {
		t.Errorf("main.go:\n%s", out)
	}
	if again, err := addGopf(out, "example.com/demo"); err != nil || again != out {
		t.Errorf("a second edit changes main.go (%v)", err)
	}
}

func TestGopfImportsFormTheirOwnGroupBeforeTheProjects(t *testing.T) {
	out, err := addGopf(goV4Main, "example.com/demo")
	if err != nil {
		t.Fatal(err)
	}
	want := "\t\"github.com/gopf-dev/gopf\"\n\t\"github.com/gopf-dev/gopf/handlers\"\n\n\tdbv1 \"example.com/demo/api/v1\"\n"
	if !strings.Contains(out, want) {
		t.Errorf("want gopf's group right before the project's:\n%s", out)
	}

	// At init the project has no imports of its own yet: those go/v4 adds
	// later at its marker must not join gopf's group.
	bare := strings.Replace(goV4Main, "\tdbv1 \"example.com/demo/api/v1\"\n", "", 1)
	bare = regexp.MustCompile(`(?m)^\t(dbcontroller|webhookdbv1) .*\n`).ReplaceAllString(bare, "")
	out, err = addImportGroup(bare, "example.com/demo", GopfModule, GopfModule+"/handlers")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\t\"github.com/gopf-dev/gopf/handlers\"\n\n\t// +kubebuilder:scaffold:imports") {
		t.Errorf("want a blank line between gopf's group and go/v4's marker:\n%s", out)
	}
}

// Kubebuilder writes PROJECT's layout at init only, and during a command it
// names the running plugin first in the request's config: edit must read
// the file to tell the user to name gopf on later commands.
func TestEditTellsHowToUseGopfInLaterCommandsWhenTheLayoutLacksIt(t *testing.T) {
	const gomod = "module example.com/demo\n\nrequire github.com/gopf-dev/gopf v0.3.0\n"
	for _, tt := range []struct {
		layout   string
		wantNote bool
	}{
		{"layout:\n- go.kubebuilder.io/v4\n", true},
		{"layout:\n- go.kubebuilder.io/v4\n- gopf/v1-alpha\n", false},
	} {
		var notes strings.Builder
		opts := testOpts()
		opts.Notes = &notes
		resp := Handle(&protocol.Request{
			Command: protocol.CommandEdit,
			Config:  &protocol.Config{Repo: "example.com/demo", Layout: []byte(`["gopf/v1-alpha","go.kubebuilder.io/v4"]`)},
			Universe: map[string]string{
				"go.mod": gomod, mainPath: wiredMain(t), setupEnvtestPath: setupEnvtestScript,
				"PROJECT": "domain: example.com\n" + tt.layout + "repo: example.com/demo\nversion: \"3\"\n",
			},
		}, opts)
		if resp.Error {
			t.Fatal(resp.ErrorMsgs)
		}
		if got := strings.Contains(notes.String(), "--plugins go/v4,gopf/v1-alpha"); got != tt.wantNote {
			t.Errorf("layout %q: note %v, want %v: %q", tt.layout, got, tt.wantNote, notes.String())
		}
	}
}
