package envtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// controlPlaneChildren counts this process's child processes that are an
// API server or etcd.
func controlPlaneChildren(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me, n := strconv.Itoa(os.Getpid()), 0
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after it.
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		comm, rest := s[open+1:closing], strings.Fields(s[closing+1:])
		if len(rest) > 1 && rest[1] == me && (comm == "kube-apiserver" || comm == "etcd") {
			n++
		}
	}
	return n
}

func TestAFailedStartLeavesNoControlPlaneRunning(t *testing.T) {
	if _, err := findAssets(""); err != nil {
		t.Skip(err)
	}
	before := controlPlaneChildren(t)

	if _, err := Start(Options{CRDDirectoryPaths: []string{filepath.Join(t.TempDir(), "missing")}}); err == nil ||
		!strings.Contains(err.Error(), "the CRDs to install") {
		t.Errorf("Start with a CRD folder that does not exist: %v, want an error naming the CRDs", err)
	}
	if n := controlPlaneChildren(t); n != before {
		t.Errorf("a CRD folder that does not exist started %d control plane processes", n-before)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: [unclosed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Options{CRDDirectoryPaths: []string{bad}}); err == nil {
		t.Fatal("Start installed a malformed CRD")
	}
	if n := controlPlaneChildren(t); n != before {
		t.Errorf("a CRD that could not be installed left %d control plane processes running", n-before)
	}
}
