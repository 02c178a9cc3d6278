package scaffold

import (
	_ "embed"
	"strings"
)

// The script the Makefile runs to provide envtest's control plane, and the
// Makefile section that defines how.
var (
	//go:embed templates/setup-envtest.sh
	setupEnvtestScript string
	//go:embed templates/gopf.mk
	makefileSection string
)

// setupEnvtestPath is where the script goes in the user's project.
const setupEnvtestPath = "hack/setup-envtest.sh"

// go/v4's Makefile lines that gopf changes: the setup-envtest target (which
// only downloads) and the test target's use of setup-envtest.
const (
	goV4SetupEnvtestRule = "setup-envtest:"
	goV4AssetsExpr       = `$(shell "$(ENVTEST)" use $(ENVTEST_K8S_VERSION) --bin-dir "$(LOCALBIN)" -p path)`
	gopfAssetsExpr       = `$(shell $(GOPF_SETUP_ENVTEST))`
	gopfSetupEnvtestRule = "setup-envtest: ## Provide kube-apiserver and etcd for envtest: KUBEBUILDER_ASSETS, bin/k8s, a download, or a build from the Go module proxy (hack/setup-envtest.sh)."
	gopfSetupEnvtestCmd  = "\t@$(GOPF_SETUP_ENVTEST) >/dev/null"
)

// patchMakefile makes go/v4's Makefile provide envtest's control plane
// through hack/setup-envtest.sh, which falls back to building
// kube-apiserver and etcd from the Go module proxy when the usual download
// is out of reach. It returns the new Makefile and what could not be done,
// for the user to do by hand. A Makefile that already runs the script is
// returned unchanged.
func patchMakefile(mk string) (string, []string) {
	if strings.Contains(mk, setupEnvtestPath) {
		return mk, nil
	}
	var todo []string
	lines := strings.Split(mk, "\n")
	rule := -1
	for i, l := range lines {
		if strings.HasPrefix(l, goV4SetupEnvtestRule) {
			rule = i
			break
		}
	}
	if rule >= 0 {
		end := rule + 1
		for end < len(lines) && strings.HasPrefix(lines[end], "\t") {
			end++
		}
		lines = append(lines[:rule], append([]string{gopfSetupEnvtestRule, gopfSetupEnvtestCmd}, lines[end:]...)...)
	} else {
		todo = append(todo, "the Makefile has no setup-envtest target; run $(GOPF_SETUP_ENVTEST) where your tests need KUBEBUILDER_ASSETS")
	}
	mk = strings.Join(lines, "\n")
	if strings.Contains(mk, goV4AssetsExpr) {
		mk = strings.ReplaceAll(mk, goV4AssetsExpr, gopfAssetsExpr)
	} else {
		todo = append(todo, "the Makefile's test target does not run setup-envtest as go/v4 scaffolds it; set KUBEBUILDER_ASSETS=\""+gopfAssetsExpr+"\" for go test by hand")
	}
	return strings.TrimRight(mk, "\n") + "\n\n" + makefileSection, todo
}
