package gopf_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gopf-dev/gopf"

// allowed lists, per package of the module, which of the module's packages it
// may depend on (directly or not). Layers point one way: handlers knows no
// other gopf package; the engine and the webhooks know handlers; the root
// package ties them together; envtest builds its operators with the root
// package (as gopf.Main does); commands may use everything.
var allowed = map[string][]string{
	"api/v1":    {},
	"handlers":  {},
	"reconcile": {"handlers"},
	"webhook":   {"handlers"},
	"":          {"handlers", "reconcile", "webhook"},
	"envtest":   {"", "handlers", "reconcile", "webhook"},
}

func TestPackagesDependOnLowerLayersOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		allow, ok := allowed[pkg]
		if !ok {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if !strings.HasPrefix(dep, module) {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(dep, module), "/")
			if !contains(allow, rel) {
				t.Errorf("package %q depends on %q, which is not below it (allowed: %v)", fields[0], dep, allow)
			}
		}
	}
	if checked != len(allowed) {
		t.Errorf("checked %d packages, want %d: a layered package was renamed or removed", checked, len(allowed))
	}
}

func TestExamplesUseOnlyThePublicAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./examples/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) && strings.Contains(imp, "/internal") {
				t.Errorf("example %s imports %s, which users cannot import", fields[0], imp)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
