package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

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
