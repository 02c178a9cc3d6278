package envtest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestWithoutBinariesTheErrorSaysHowToGetThemOutsideGopf(t *testing.T) {
	t.Setenv(AssetsEnv, "")
	t.Chdir(t.TempDir())
	_, err := findAssets("")
	if err == nil {
		t.Fatal("findAssets found binaries in an empty folder")
	}
	for _, want := range []string{
		"go list -m -f '{{.Dir}}' github.com/gopf-dev/gopf", "hack/setup-envtest.sh", "bin/k8s/" + kubeVersion + "-",
		"make envtest", "setup-envtest@latest", AssetsEnv,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q:\n%v", want, err)
		}
	}
}

func TestTheSuggestedVersionIsTheOneTheScriptBuilds(t *testing.T) {
	script, err := os.ReadFile("../hack/setup-envtest.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`KUBE_VERSION="\$\{KUBE_VERSION:-v([0-9.]+)\}"`).FindSubmatch(script)
	if m == nil || string(m[1]) != kubeVersion {
		t.Errorf("hack/setup-envtest.sh builds %q by default, errNoAssets suggests %s", m, kubeVersion)
	}
}
