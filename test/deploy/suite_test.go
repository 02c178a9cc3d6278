package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/gopf-dev/gopf/envtest"
)

// root is the repository's root folder.
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

// The control plane is started by the first test that needs it and shared.
var (
	cpOnce sync.Once
	cp     *envtest.ControlPlane
	cpErr  error
)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	code := m.Run()
	if cp != nil {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

// controlPlane returns the shared control plane, with gopf's CRDs
// installed. It skips the test when there are no control-plane binaries.
func controlPlane(t *testing.T) *envtest.ControlPlane {
	t.Helper()
	if os.Getenv(envtest.AssetsEnv) == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*-"+runtime.GOOS+"-"+runtime.GOARCH, "kube-apiserver"))
		if len(matches) == 0 {
			t.Skip("no kube-apiserver: run `make envtest` (or `make test`) or set " + envtest.AssetsEnv)
		}
	}
	cpOnce.Do(func() {
		cp, cpErr = envtest.Start(envtest.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}})
	})
	if cpErr != nil {
		t.Fatalf("starting the control plane: %v", cpErr)
	}
	return cp
}

// kustomize runs the kustomize version the Makefile names, in dir: the
// binary `make kustomize` installs if it is there, else through `go run`
// (built from the module proxy on first use, cached afterwards).
func kustomize(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUSTOMIZE_VERSION \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no KUSTOMIZE_VERSION")
	}
	version := string(m[1])
	var cmd *exec.Cmd
	if bin := filepath.Join(root, "bin", "kustomize-"+version); isFile(bin) {
		cmd = exec.Command(bin, args...)
	} else {
		cmd = exec.Command("go", append([]string{"run", "sigs.k8s.io/kustomize/kustomize/v5@" + version}, args...)...)
	}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// buildInstaller does what `make build-installer IMG=img` does, in a
// temporary overlay instead of bin/deploy: config/default with the image
// set, as one multi-document YAML.
func buildInstaller(t *testing.T, img string) []byte {
	t.Helper()
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	kustomize(t, overlay, "create", "--resources", base)
	kustomize(t, overlay, "edit", "set", "image", "controller="+img)
	return kustomize(t, overlay, "build")
}

// decode splits multi-document YAML into objects.
func decode(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}
