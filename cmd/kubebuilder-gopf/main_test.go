package main

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/scaffold"
)

func TestFlagsAndMetadataRequestsGetHelpForEachSubcommand(t *testing.T) {
	for _, sub := range []string{"init", "api", "webhook", "edit"} {
		t.Run(sub, func(t *testing.T) {
			flags := mustSucceed(t, call(t, loadFixture(t, "flags-"+sub).encode(t), testOptions(t)))
			if flags.Command != "flags" || flags.APIVersion != protocol.APIVersion {
				t.Errorf("flags response echoes %q %q", flags.APIVersion, flags.Command)
			}
			if len(flags.Universe) != 0 {
				t.Errorf("flags response writes files: %v", keys(flags.Universe))
			}
			names := map[string]bool{}
			for _, f := range flags.Flags {
				names[f.Name] = true
				if f.Usage == "" || f.Type != "string" {
					t.Errorf("flag %+v: want a string flag with usage text", f)
				}
				for _, owned := range []string{"group", "version", "kind", "help", "plugins"} {
					if f.Name == owned {
						t.Errorf("flag %q belongs to kubebuilder", f.Name)
					}
				}
			}
			wantDependencyFlags := sub == "init" || sub == "edit"
			if names["gopf-version"] != wantDependencyFlags || names["gopf-replace"] != wantDependencyFlags {
				t.Errorf("flags of %s: %v; want --gopf-version and --gopf-replace only for init and edit", sub, names)
			}

			meta := mustSucceed(t, call(t, loadFixture(t, "metadata-"+sub).encode(t), testOptions(t)))
			if len(meta.Metadata.Description) < 100 || !strings.Contains(meta.Metadata.Examples, "kubebuilder ") {
				t.Errorf("metadata of %s is thin: %+v", sub, meta.Metadata)
			}
		})
	}
}

func TestInitWiresGopfIntoGoV4Project(t *testing.T) {
	resp := mustSucceed(t, call(t, loadFixture(t, "init").encode(t), testOptions(t)))
	want := []string{"Makefile", "cmd/main.go", "go.mod", "hack/setup-envtest.sh"}
	if got := keys(resp.Universe); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("init writes %v, want %v", got, want)
	}

	gomod := resp.Universe["go.mod"]
	for _, line := range []string{
		"require " + scaffold.GopfModule + " " + scaffold.PlaceholderVersion,
		"replace " + scaffold.GopfModule + " => " + repoRoot(t),
		"require sigs.k8s.io/controller-runtime", // go/v4's requirements stay
	} {
		if !strings.Contains(gomod, line) {
			t.Errorf("go.mod lacks %q:\n%s", line, gomod)
		}
	}

	main := resp.Universe["cmd/main.go"]
	for _, s := range []string{
		`"github.com/gopf-dev/gopf"`,
		"gopf.SetupWithManager(mgr, gopfRegistry)",
		"func registerHandlers(reg *handlers.Registry) {\n\t// +gopf:scaffold:handlers\n}",
		"func registerWebhooks(reg *handlers.Registry) {\n\t// +gopf:scaffold:webhooks\n}",
		// go/v4's markers stay for its later commands, and so do the user's flags.
		"// +kubebuilder:scaffold:imports", "// +kubebuilder:scaffold:scheme", "// +kubebuilder:scaffold:builder",
		`flag.BoolVar(&enableLeaderElection, "leader-elect", false,`, `"webhook-cert-path"`,
	} {
		if !strings.Contains(main, s) {
			t.Errorf("cmd/main.go lacks %q", s)
		}
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "main.go", main, 0); err != nil {
		t.Errorf("cmd/main.go does not parse: %v", err)
	}
	// SetupWithManager serves the admission handlers already: a second
	// webhook.Setup registers each path twice, and controller-runtime's
	// webhook server panics on that.
	if strings.Contains(main, "gopfwebhook") || strings.Contains(main, `"github.com/gopf-dev/gopf/webhook"`) {
		t.Error("cmd/main.go sets the admission handlers up a second time")
	}

	mk := resp.Universe["Makefile"]
	for _, s := range []string{"GOPF_SETUP_ENVTEST = ", "bash hack/setup-envtest.sh", `KUBEBUILDER_ASSETS="$(shell $(GOPF_SETUP_ENVTEST))" go test`, "envtest-assets:"} {
		if !strings.Contains(mk, s) {
			t.Errorf("Makefile lacks %q", s)
		}
	}
	if strings.Contains(mk, `"$(ENVTEST)" use`) {
		t.Error("Makefile still runs the download-only setup-envtest")
	}
	if script := resp.Universe["hack/setup-envtest.sh"]; !strings.HasPrefix(script, "#!/usr/bin/env bash") {
		t.Errorf("hack/setup-envtest.sh is not a bash script: %.80q", script)
	}
}

func TestInitAndEditChangeNothingTheSecondTime(t *testing.T) {
	f := loadFixture(t, "init")
	first := mustSucceed(t, call(t, f.encode(t), testOptions(t)))
	wired := f.with(overlay(f.Universe, first.Universe))
	for _, command := range []string{"init", "edit"} {
		again := wired.with(wired.Universe)
		again.Command = command
		resp := mustSucceed(t, call(t, again.encode(t), testOptions(t)))
		if len(resp.Universe) != 0 {
			t.Errorf("%s on a wired project writes %v", command, keys(resp.Universe))
		}
	}
}

// edit does what init does, and tidies go.mod, which go/v4 does after init
// but nothing does after edit.
func TestEditOnGoV4ProjectDoesWhatInitDoesAndTidiesGoMod(t *testing.T) {
	f := loadFixture(t, "init")
	init := mustSucceed(t, call(t, f.encode(t), testOptions(t)))
	edit := *f
	edit.Command = "edit"
	edit.Args = nil
	resp := mustSucceed(t, call(t, edit.encode(t), testOptions(t)))
	want := keys(overlay(init.Universe, map[string]string{"go.sum": ""}))
	if got := keys(resp.Universe); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("edit writes %v, want %v", got, want)
	}
	for p, c := range init.Universe {
		if p != "go.mod" && resp.Universe[p] != c {
			t.Errorf("edit writes another %s than init", p)
		}
	}
	gomod := resp.Universe["go.mod"]
	for _, s := range []string{
		"github.com/gopf-dev/gopf " + scaffold.PlaceholderVersion,
		"replace github.com/gopf-dev/gopf => " + repoRoot(t),
		"// indirect", // gopf's own requirements, which go build needs listed
	} {
		if !strings.Contains(gomod, s) {
			t.Errorf("the tidied go.mod lacks %q:\n%s", s, gomod)
		}
	}
	if !strings.Contains(resp.Universe["go.sum"], "sigs.k8s.io/controller-runtime ") {
		t.Errorf("go.sum:\n%.400s", resp.Universe["go.sum"])
	}
}

func TestEditWithVersionOnlyUpdatesGoMod(t *testing.T) {
	f := loadFixture(t, "init")
	wired := f.with(overlay(f.Universe, mustSucceed(t, call(t, f.encode(t), testOptions(t))).Universe))
	edit := wired.withArgs("--gopf-version", "v0.3.0")
	edit.Command = "edit"
	resp := mustSucceed(t, call(t, edit.encode(t), testOptions(t)))
	if got := keys(resp.Universe); strings.Join(got, " ") != "go.mod go.sum" {
		t.Fatalf("edit --gopf-version writes %v, want go.mod and go.sum only", got)
	}
	if !strings.Contains(resp.Universe["go.mod"], "github.com/gopf-dev/gopf v0.3.0\n") {
		t.Errorf("go.mod:\n%s", resp.Universe["go.mod"])
	}
}

func TestInitWithoutVersionOrCheckoutAsksWhichGopf(t *testing.T) {
	opts := testOptions(t)
	opts.Getenv = func(string) string { return "" }
	resp := call(t, loadFixture(t, "init").encode(t), opts)
	if !resp.Error || !strings.Contains(strings.Join(resp.ErrorMsgs, " "), "--gopf-version") {
		t.Fatalf("want an error naming --gopf-version, got %+v", resp.ErrorMsgs)
	}

	opts.Checkout = "/src/gopf"
	resp = mustSucceed(t, call(t, loadFixture(t, "init").encode(t), opts))
	if !strings.Contains(resp.Universe["go.mod"], "replace github.com/gopf-dev/gopf => /src/gopf\n") {
		t.Errorf("a plugin built from a checkout should default to it:\n%s", resp.Universe["go.mod"])
	}

	opts.BuildVersion = "v1.2.3"
	resp = mustSucceed(t, call(t, loadFixture(t, "init").withArgs("--gopf-version", "v1.2.4").encode(t), opts))
	if !strings.Contains(resp.Universe["go.mod"], "require github.com/gopf-dev/gopf v1.2.4\n") || strings.Contains(resp.Universe["go.mod"], "replace") {
		t.Errorf("--gopf-version should win over the build's version and checkout:\n%s", resp.Universe["go.mod"])
	}
}

func TestCreateAPIReplacesTheReconcilerWithHandlers(t *testing.T) {
	c := runChain(t, testOptions(t))
	api := c.steps[1].response
	want := []string{"cmd/main.go", "internal/controller/database_controller.go", "internal/controller/database_controller_test.go"}
	if got := keys(api.Universe); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("create api writes %v, want %v", got, want)
	}
	handlers := api.Universe["internal/controller/database_controller.go"]
	for _, s := range []string{
		"func RegisterDatabaseHandlers(reg *handlers.Registry) {",
		"handlers.OnCreate(reg, createDatabase)", "handlers.OnUpdate(reg, updateDatabase)",
		"handlers.OnDelete(reg, deleteDatabase)", "handlers.OnReconcile(reg, reconcileDatabase)",
		"// +kubebuilder:rbac:groups=db.example.com,resources=databases,verbs=get;list;watch;patch",
		"// +kubebuilder:rbac:groups=db.example.com,resources=databases/finalizers,verbs=update",
		"// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch",
		`dbv1 "example.com/demo/api/v1"`,
		"Copyright 2026.",
	} {
		if !strings.Contains(handlers, s) {
			t.Errorf("the handlers file lacks %q", s)
		}
	}
	if strings.Contains(handlers, "DatabaseReconciler") {
		t.Error("the handlers file still has go/v4's Reconciler")
	}
	test := api.Universe["internal/controller/database_controller_test.go"]
	for _, s := range []string{"RegisterDatabaseHandlers(reg)", "gopfenvtest.RunOperator(", `Describe("Database handlers"`} {
		if !strings.Contains(test, s) {
			t.Errorf("the handlers test lacks %q", s)
		}
	}

	main := api.Universe["cmd/main.go"]
	if strings.Contains(main, "DatabaseReconciler") {
		t.Error("cmd/main.go still sets go/v4's Reconciler up")
	}
	for _, s := range []string{"controller.RegisterDatabaseHandlers(reg)\n\t// +gopf:scaffold:handlers", "utilruntime.Must(dbv1.AddToScheme(scheme))"} {
		if !strings.Contains(main, s) {
			t.Errorf("cmd/main.go lacks %q", s)
		}
	}
}

func TestCreateWebhookReplacesDefaulterAndValidatorWithAdmissionHandlers(t *testing.T) {
	c := runChain(t, testOptions(t))
	hook := c.steps[2].response
	want := []string{"cmd/main.go", "internal/webhook/v1/database_webhook.go", "internal/webhook/v1/database_webhook_test.go", "internal/webhook/v1/webhook_suite_test.go"}
	if got := keys(hook.Universe); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("create webhook writes %v, want %v", got, want)
	}
	handlers := hook.Universe["internal/webhook/v1/database_webhook.go"]
	for _, s := range []string{
		"func RegisterDatabaseWebhooks(reg *handlers.Registry) {",
		"handlers.OnMutate(reg, defaultDatabase)", "handlers.OnValidate(reg, validateDatabase)",
		"func defaultDatabase(ctx context.Context, database *dbv1.Database, a *handlers.Admission[*dbv1.Database]) error {",
		"// +kubebuilder:webhook:path=/mutate/db.example.com/v1/database,mutating=true,",
		"// +kubebuilder:webhook:path=/validate/db.example.com/v1/database,mutating=false,",
	} {
		if !strings.Contains(handlers, s) {
			t.Errorf("the webhook file lacks %q", s)
		}
	}
	for _, s := range []string{"Defaulter", "Validator", "SetupDatabaseWebhookWithManager"} {
		for p, content := range hook.Universe {
			if strings.Contains(content, s) {
				t.Errorf("%s still uses go/v4's %s", p, s)
			}
		}
	}
	main := hook.Universe["cmd/main.go"]
	if !strings.Contains(main, "webhookv1.RegisterDatabaseWebhooks(reg)\n\t// +gopf:scaffold:webhooks") {
		t.Errorf("cmd/main.go does not register the admission handlers:\n%s", main)
	}
	if strings.Contains(main, "nolint:goconst") || strings.Count(main, `os.Getenv("ENABLE_WEBHOOKS")`) != 1 {
		t.Error("cmd/main.go keeps go/v4's webhook block")
	}
	suite := hook.Universe["internal/webhook/v1/webhook_suite_test.go"]
	for _, s := range []string{"RegisterDatabaseWebhooks(reg)", `filepath.Join("..", "..", "..", "config", "crd", "bases")`, "Expect(dbv1.AddToScheme(testScheme))"} {
		if !strings.Contains(suite, s) {
			t.Errorf("the webhook suite lacks %q", s)
		}
	}

	// Every command again on the finished project changes nothing.
	for i, st := range c.steps {
		again := st.request.with(c.final())
		if resp := mustSucceed(t, call(t, again.encode(t), testOptions(t))); len(resp.Universe) != 0 {
			t.Errorf("%s again writes %v", c.steps[i].name, keys(resp.Universe))
		}
	}
}

func TestDefaultingOnlyWebhookHasNoValidator(t *testing.T) {
	c := runChain(t, testOptions(t))
	api := c.steps[1]
	f := loadFixture(t, "create-webhook")
	u, err := mergeUniverse(loadFixture(t, "create-api").Universe, api.after, f.Universe)
	if err != nil {
		t.Fatal(err)
	}
	req := f.with(u).withArgs("--group", "db", "--version", "v1", "--kind", "Database", "--defaulting")
	resp := mustSucceed(t, call(t, req.encode(t), testOptions(t)))
	handlers := resp.Universe["internal/webhook/v1/database_webhook.go"]
	if !strings.Contains(handlers, "handlers.OnMutate(") || strings.Contains(handlers, "OnValidate(") || strings.Contains(handlers, "/validate/") {
		t.Errorf("want only a mutating handler:\n%s", handlers)
	}
}

func TestBadRequestsGetErrorsThatSayWhatToDo(t *testing.T) {
	wiredAPI := func(t *testing.T) *fixture {
		c := runChain(t, testOptions(t))
		return c.steps[1].request
	}
	without := func(u map[string]string, paths ...string) map[string]string {
		out := overlay(u, nil)
		for _, p := range paths {
			delete(out, p)
		}
		return out
	}
	tests := []struct {
		name    string
		request func(t *testing.T) []byte
		want    string // in the messages
	}{
		{"unknown command", func(t *testing.T) []byte {
			f := loadFixture(t, "init")
			f.Command = "create something"
			return f.encode(t)
		}, `does not know the command "create something"`},
		{"no command", func(t *testing.T) []byte { return []byte(`{"apiVersion":"v1alpha1","universe":{}}`) }, "does not know the command"},
		{"another protocol version", func(t *testing.T) []byte {
			f := loadFixture(t, "flags-init")
			f.APIVersion = "v2"
			return f.encode(t)
		}, "protocol v1alpha1"},
		{"not JSON", func(t *testing.T) []byte { return []byte(`{"command": "init", "universe": {"go.mod": "trunc`) }, "could not read kubebuilder's request"},
		{"flags for an unknown subcommand", func(t *testing.T) []byte {
			return loadFixture(t, "flags-init").withArgs("--frobnicate").encode(t)
		}, "want one of --init"},
		{"init on an empty folder", func(t *testing.T) []byte {
			return loadFixture(t, "init").with(map[string]string{}).encode(t)
		}, "the project has no go.mod, cmd/main.go, Makefile"},
		{"init without go/v4's main.go", func(t *testing.T) []byte {
			f := loadFixture(t, "init")
			return f.with(without(f.Universe, "cmd/main.go")).encode(t)
		}, "run go/v4 first in the same command"},
		{"create api without --kind", func(t *testing.T) []byte {
			return wiredAPI(t).withArgs("--group", "db", "--version", "v1").encode(t)
		}, "missing --kind"},
		{"create api without group, version and kind", func(t *testing.T) []byte {
			return wiredAPI(t).withArgs("--resource", "--controller").encode(t)
		}, "missing --group, --version, --kind"},
		{"create api with a lower-case kind", func(t *testing.T) []byte {
			return wiredAPI(t).withArgs("--group", "db", "--version", "v1", "--kind", "database").encode(t)
		}, "must be a CamelCase Go identifier"},
		{"create api with a bad version", func(t *testing.T) []byte {
			return wiredAPI(t).withArgs("--group", "db", "--version", "1", "--kind", "Database").encode(t)
		}, "not a Kubernetes API version"},
		{"create api without go/v4's controller", func(t *testing.T) []byte {
			f := wiredAPI(t)
			return f.with(without(f.Universe, "internal/controller/database_controller.go")).encode(t)
		}, "the project has no internal/controller/database_controller.go"},
		{"create api before gopf is wired in", func(t *testing.T) []byte {
			return loadFixture(t, "create-api").encode(t)
		}, `Run "kubebuilder edit --plugins gopf/v1-alpha" first`},
		{"create api on a universe without main.go", func(t *testing.T) []byte {
			f := wiredAPI(t)
			return f.with(without(f.Universe, "cmd/main.go")).encode(t)
		}, "the project has no cmd/main.go"},
		{"create webhook for conversion", func(t *testing.T) []byte {
			return loadFixture(t, "create-webhook").withArgs("--group", "db", "--version", "v1", "--kind", "Database", "--conversion").encode(t)
		}, "--plugins go/v4"},
		{"create webhook with neither defaulting nor validation", func(t *testing.T) []byte {
			return loadFixture(t, "create-webhook").withArgs("--group", "db", "--version", "v1", "--kind", "Database").encode(t)
		}, "give --defaulting"},
		{"create webhook without go/v4's webhook", func(t *testing.T) []byte {
			c := runChain(t, testOptions(t))
			f := c.steps[2].request
			return f.with(without(f.Universe, "internal/webhook/v1/database_webhook.go")).encode(t)
		}, "the project has no internal/webhook/v1/database_webhook.go"},
		{"a bad --gopf-version", func(t *testing.T) []byte {
			return loadFixture(t, "init").withArgs("--gopf-version", "latest").encode(t)
		}, "not a module version"},
		{"--gopf-replace without a value", func(t *testing.T) []byte {
			return loadFixture(t, "init").withArgs("--gopf-replace").encode(t)
		}, "need a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := call(t, tt.request(t), testOptions(t))
			if !resp.Error {
				t.Fatalf("no error; the response writes %v", keys(resp.Universe))
			}
			if len(resp.Universe) != 0 {
				t.Errorf("a failed response writes %v", keys(resp.Universe))
			}
			if msg := strings.Join(resp.ErrorMsgs, "\n"); !strings.Contains(msg, tt.want) {
				t.Errorf("messages %q do not say %q", msg, tt.want)
			}
		})
	}
}

func TestCreateAPIWithoutControllerDoesNothing(t *testing.T) {
	c := runChain(t, testOptions(t))
	f := c.steps[1].request
	u := overlay(f.Universe, nil)
	delete(u, "internal/controller/database_controller.go")
	resp := mustSucceed(t, call(t, f.with(u).withArgs("--group", "db", "--version", "v1", "--kind", "Database", "--controller=false").encode(t), testOptions(t)))
	if len(resp.Universe) != 0 {
		t.Errorf("writes %v", keys(resp.Universe))
	}
}

// A universe holds every file of the project, binaries included: the
// decoder must stream past what the plugin does not read. The request here
// carries 256 MiB of junk (with escapes, as binaries encode) around the
// captured init universe; the plugin must allocate far less than that.
func TestLargeUniverseIsStreamedWithBoundedMemory(t *testing.T) {
	const junk = 256 << 20
	f := loadFixture(t, "init")
	head, err := json.Marshal(map[string]any{"apiVersion": f.APIVersion, "command": f.Command, "args": f.Args, "config": f.Config})
	if err != nil {
		t.Fatal(err)
	}
	universe, err := json.Marshal(f.Universe)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte(`ELF\u0000\"\\\ufffd junk `), 1<<12)
		w := func(b []byte) bool { _, err := pw.Write(b); return err == nil }
		// The universe first, with the command after it, as the order of
		// fields is not fixed.
		ok := w([]byte(`{"universe":{"bin/controller-gen":"`))
		for n := 0; ok && n < junk/2; n += len(chunk) {
			ok = w(chunk)
		}
		ok = ok && w([]byte(`",`)) && w(universe[1:len(universe)-1]) && w([]byte(`,"bin/manager":"`))
		for n := 0; ok && n < junk/2; n += len(chunk) {
			ok = w(chunk)
		}
		if ok && w([]byte(`"},`)) {
			w(head[1:])
		}
		pw.CloseWithError(nil)
	}()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var stdout bytes.Buffer
	if code := run(pr, &stdout, io.Discard, testOptions(t)); code != 0 {
		t.Fatalf("run returned %d", code)
	}
	runtime.ReadMemStats(&after)
	pr.Close()

	var resp protocol.Response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, resp)
	if _, ok := resp.Universe["cmd/main.go"]; !ok {
		t.Errorf("init on the large universe writes %v", keys(resp.Universe))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB while reading a %d MiB request", allocated>>20, junk>>20)
	if allocated > 48<<20 {
		t.Errorf("allocated %d MiB for a request of %d MiB of skipped files: the universe is not streamed", allocated>>20, junk>>20)
	}
}

// The binary itself: JSON on stdout and nothing else, notes on stderr.
func TestBinaryAnswersOnStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := filepath.Join(t.TempDir(), "gopf")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	in, err := os.Open(filepath.Join("testdata", "init.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(bin)
	cmd.Stdin = in
	cmd.Env = append(os.Environ(), "GOPF_REPLACE="+repoRoot(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the plugin failed: %v\n%s", err, stderr.String())
	}
	var resp protocol.Response
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&resp); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON response (%v): %s", err, stdout.String())
	}
	mustSucceed(t, resp)
	if len(resp.Universe) != 4 {
		t.Errorf("the binary's init writes %v", keys(resp.Universe))
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
