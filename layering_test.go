package gopf_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gopf-dev/gopf"

// libraryLayers lists, for every library package of the module, which of the
// module's packages it may depend on (directly or not). Layers point one
// way. At the bottom: internal/spec (the engine contract) and small
// packages that know no other gopf package (scope, gate, metrics,
// transport, shard, and controlplane, the API server of their tests; and
// assign, gopf's own assigner of shards, over shard); handlers (the registration API) knows only the contract;
// handlers/objects (helpers for children) knows only handlers and the
// contract, and no other package needs it; internal/contract instantiates
// the contract with handlers' types. The engine's parts know nothing of
// the engine: internal/state (gopf's stored state and its storages),
// internal/kopfstate (Kopf's format, over state), internal/memory (what the
// process remembers), internal/decide (what a reconcile does with an
// object, a pure function), internal/patch (how gopf's writes of a kind are
// sent), internal/objsize (the size an object can have), internal/outside
// (objects that left a narrowed cache), internal/policy, internal/logs, internal/spawn
// (timers and daemons), internal/peering and reconcile/rbac. Then
// internal/engine (decide, execute, write), internal/operator (its wiring
// on the manager) and reconcile, the public face; internal/plan renders the
// engine's decision; the webhooks sit beside the engine; Main's command line
// (internal/cli) knows those but not the root package, which ties them all
// together; envtest may use everything. Every package of the module is
// either here or a program (cmd/, examples/, test/), which uses only what
// users can import.
var libraryLayers = map[string][]string{
	"internal/spec":         {},
	"internal/scope":        {},
	"internal/metrics":      {},
	"internal/logs":         {"handlers", "internal/spec"},
	"internal/gate":         {},
	"internal/transport":    {},
	"internal/shard":        {},
	"internal/controlplane": {},
	"internal/assign":       {"internal/shard"},
	"internal/memory":       {"handlers", "internal/gate", "internal/shard", "internal/spec", "internal/state"},
	"api/v1":                {},
	"handlers":              {"internal/spec"},
	"handlers/objects":      {"handlers", "internal/spec"},
	"internal/contract":     {"handlers", "internal/spec"},
	"internal/state":        {"handlers", "internal/shard", "internal/spec"},
	"internal/policy":       {"handlers", "internal/spec"},
	"internal/decide":       {"handlers", "internal/contract", "internal/shard", "internal/spec", "internal/state"},
	"internal/patch":        {"handlers", "internal/shard", "internal/spec", "internal/state"},
	"internal/objsize":      {"handlers", "internal/shard", "internal/spec", "internal/state"},
	"internal/outside":      {"internal/scope"},
	"internal/kopfstate":    {"handlers", "internal/shard", "internal/spec", "internal/state"},
	"internal/peering":      {"handlers", "internal/kopfstate", "internal/scope", "internal/shard", "internal/spec", "internal/state"},
	"internal/spawn": {"handlers", "internal/contract", "internal/logs", "internal/metrics", "internal/policy", "internal/shard",
		"internal/spec", "internal/state"},
	"reconcile/rbac":    {"handlers", "internal/contract", "internal/spec"},
	"internal/engine":   engineParts,
	"internal/operator": with(engineParts, "internal/assign", "internal/engine"),
	"reconcile":         with(engineParts, "internal/assign", "internal/engine", "internal/operator"),
	"internal/plan":     with(engineParts, "internal/assign", "internal/engine", "internal/operator"),
	"webhook":           {"handlers", "internal/contract", "internal/logs", "internal/spec"},
	"internal/cli": with(engineParts, "internal/assign", "internal/engine", "internal/operator", "internal/plan", "reconcile", "reconcile/rbac",
		"webhook"),
	"": with(engineParts, "internal/assign", "internal/cli", "internal/engine", "internal/operator", "internal/plan", "internal/transport", "reconcile",
		"reconcile/rbac", "webhook"),
	"envtest": with(engineParts, "", "api/v1", "handlers/objects", "internal/cli", "internal/assign", "internal/engine", "internal/operator", "internal/plan",
		"internal/transport", "reconcile", "reconcile/rbac", "webhook"),
}

// engineParts are the packages the engine builds on.
var engineParts = []string{
	"handlers", "internal/contract", "internal/decide", "internal/gate", "internal/kopfstate", "internal/logs", "internal/memory",
	"internal/metrics", "internal/objsize", "internal/outside", "internal/patch", "internal/peering", "internal/policy", "internal/scope", "internal/shard",
	"internal/spawn", "internal/spec", "internal/state",
}

// with returns base and more, in a new slice.
func with(base []string, more ...string) []string {
	return append(slices.Clone(base), more...)
}

// programDirs hold the module's programs and their tests: operators,
// commands, generators, benchmarks and test suites.
var programDirs = []string{"cmd/", "examples/", "hack/", "test/"}

// goList runs go list with a template over the whole module and returns a
// line per package.
func goList(t *testing.T, format string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", format, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestEveryLibraryPackageDependsOnLowerLayersOnly(t *testing.T) {
	checked := 0
	for _, line := range goList(t, `{{.ImportPath}} {{join .Deps " "}}`) {
		fields := strings.Fields(line)
		pkg := rel(fields[0])
		allow, ok := libraryLayers[pkg]
		if !ok {
			if !isProgram(pkg) {
				t.Errorf("package %q is neither a layer of libraryLayers nor under %v: give it a layer", fields[0], programDirs)
			}
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, module) && !slices.Contains(allow, rel(dep)) {
				t.Errorf("package %q depends on %q, which is not below it (allowed: %v)", fields[0], dep, allow)
			}
		}
	}
	if checked != len(libraryLayers) {
		t.Errorf("checked %d packages, want %d: a layered package was renamed or removed", checked, len(libraryLayers))
	}
}

func TestProgramsUseOnlyThePublicAPI(t *testing.T) {
	lines := goList(t, `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`)
	for _, v := range privateImports(lines) {
		t.Error(v)
	}
}

func TestThePublicAPITestCatchesAPrivateImport(t *testing.T) {
	lines := []string{
		module + "/examples/minimal " + module + " " + module + "/handlers context",
		module + "/examples/bad " + module + "/internal/spec",
		module + "/cmd/kubebuilder-gopf " + module + "/cmd/kubebuilder-gopf/internal/scaffold",
	}
	got := privateImports(lines)
	if len(got) != 1 || !strings.Contains(got[0], "examples/bad imports "+module+"/internal/spec") {
		t.Fatalf("privateImports(%q) = %q, want exactly the bad example's import of internal/spec", lines, got)
	}
}

// privateImports reports the programs (lines of "package imports...") that
// import one of the library's internal packages, which users cannot import.
// A program's own internal packages are its business.
func privateImports(lines []string) []string {
	var out []string
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 || !isProgram(rel(fields[0])) {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(rel(imp), "internal/") && strings.HasPrefix(imp, module+"/") {
				out = append(out, fields[0]+" imports "+imp+", which users cannot import")
			}
		}
	}
	return out
}

func TestTheRootPackageDoesNotRepeatTheRegistrationAPI(t *testing.T) {
	root, reg := exportedNames(t, "."), exportedNames(t, "handlers")
	for name := range root {
		if reg[name] {
			t.Errorf("package gopf exports %s, as package handlers does: the registration API has one spelling, handlers.%s", name, name)
		}
	}
}

// exportedNames returns the exported top-level names of the package in dir.
func exportedNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						names[spec.Name.Name] = spec.Name.IsExported()
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							names[n.Name] = n.IsExported()
						}
					}
				}
			}
		}
	}
	return names
}

func rel(pkg string) string { return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/") }

func isProgram(pkg string) bool {
	for _, dir := range programDirs {
		if strings.HasPrefix(pkg, dir) {
			return true
		}
	}
	return false
}
