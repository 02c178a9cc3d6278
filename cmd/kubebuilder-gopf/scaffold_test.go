package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The project the captured kubebuilder commands scaffold, with gopf's
// answers applied, is a working operator: it tidies against this checkout,
// builds, vets, and its own "make test" (controller-gen, the envtest test of
// the Database handlers, the envtest suite of its admission handlers)
// passes. Set GOPF_KEEP_SCAFFOLD=1 to keep the project for a look.
//
// It needs the envtest binaries (KUBEBUILDER_ASSETS or bin/k8s, from
// "make envtest") and controller-gen in bin/ ("make controller-gen"); "make
// test" provides both. It downloads modules and builds, so -short skips it.
func TestScaffoldedProjectBuildsAndPassesItsTests(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds and tests a scaffolded project (about a minute with a warm module cache)")
	}
	root := repoRoot(t)
	assets := envtestAssets(t, root)
	controllerGen := newestFile(filepath.Join(root, "bin"), "controller-gen*")
	if controllerGen == "" {
		t.Skip("no controller-gen in " + filepath.Join(root, "bin") + `: run "make controller-gen" (make test does)`)
	}
	for _, tool := range []string{"make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}

	c := runChain(t, testOptions(t))
	dir := t.TempDir()
	if os.Getenv("GOPF_KEEP_SCAFFOLD") != "" {
		var err error
		if dir, err = os.MkdirTemp("", "gopf-scaffold-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("the scaffolded project is in %s", dir)
	}
	for p, content := range c.final() {
		file := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	useControllerGen(t, dir, controllerGen)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env := append(isolatedEnv(t, dir), "GOFLAGS=-mod=mod", "GOWORK=off", "KUBEBUILDER_ASSETS="+assets)
	sh := func(name string, args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// go/v4's init runs go mod tidy after the plugins have written their
	// files; so does this test, once, at the end.
	sh("go", "mod", "tidy")
	if out := sh("gofmt", "-l", "."); strings.TrimSpace(out) != "" {
		t.Errorf("files gofmt would change:\n%s", out)
	}
	sh("go", "build", "./...")
	sh("go", "vet", "./...")
	out := sh("make", "test")
	for _, pkg := range []string{"example.com/demo/internal/controller", "example.com/demo/internal/webhook/v1"} {
		if !strings.Contains(out, "ok  \t"+pkg) {
			t.Errorf("make test did not pass %s:\n%s", pkg, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "config", "webhook", "manifests.yaml")); err != nil {
		t.Errorf("make manifests wrote no webhook manifests: %v", err)
	} else if manifests, _ := os.ReadFile(filepath.Join(dir, "config", "webhook", "manifests.yaml")); !strings.Contains(string(manifests), "path: /validate/db.example.com/v1/database") {
		t.Errorf("the webhook manifests do not point at gopf's paths:\n%s", manifests)
	}
}

// useControllerGen puts a copy of controller-gen where the project's Makefile looks
// for the version it pins (bin/controller-gen-<version>, linked from
// bin/controller-gen), so that make does not download and build that
// version: the checkout's is good enough to generate CRDs and webhook
// manifests.
func useControllerGen(t *testing.T, dir, controllerGen string) {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CONTROLLER_TOOLS_VERSION \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile pins no CONTROLLER_TOOLS_VERSION")
	}
	bin, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(bin, "bin")
	versioned := filepath.Join(bin, "controller-gen-"+string(m[1]))
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy, not a link: nothing the project's make does may touch the
	// checkout's files.
	data, err := os.ReadFile(controllerGen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(versioned, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(versioned, filepath.Join(bin, "controller-gen")); err != nil {
		t.Fatal(err)
	}
}

// isolatedEnv is this process's environment without what would reach into
// the project's make from outside: make's own variables (a surrounding
// "make test" passes its command-line variables down in MAKEFLAGS) and the
// variables the project's Makefile defines with ?=, such as CONTROLLER_GEN
// or LOCALBIN, which could point its downloads and clean-ups at this
// checkout's files.
func isolatedEnv(t *testing.T, dir string) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{"MAKEFLAGS": true, "MFLAGS": true, "MAKELEVEL": true, "MAKEOVERRIDES": true, "GNUMAKEFLAGS": true}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*\?=`).FindAllSubmatch(mk, -1) {
		drop[string(m[1])] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return env
}

// envtestAssets returns the folder of kube-apiserver and etcd, or skips the
// test.
func envtestAssets(t *testing.T, root string) string {
	t.Helper()
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	dir := newestFile(filepath.Join(root, "bin", "k8s"), "*")
	if dir == "" {
		t.Skip("no envtest binaries: set KUBEBUILDER_ASSETS or run \"make envtest\" (make test does)")
	}
	return dir
}

// newestFile returns the last match of pattern in dir in name order, or "".
func newestFile(dir, pattern string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	sort.Strings(matches)
	if len(matches) == 0 {
		return ""
	}
	return matches[len(matches)-1]
}
