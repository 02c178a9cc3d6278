//go:build unix

package main

import (
	"errors"
	"os/exec"
	"reflect"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestIsManifest(t *testing.T) {
	for name, want := range map[string]bool{
		"kopf_v1_kopfexample.yaml": true,
		"a.yml":                    true,
		"b.json":                   true,
		"kustomization.yaml":       false,
		"Kustomization.yml":        false,
		"dir/kustomization.yaml":   false,
		"my-kustomization.yaml":    true,
		"README.md":                false,
		"yaml":                     false,
	} {
		if got := isManifest(name); got != want {
			t.Errorf("isManifest(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestParseManifestsSplitsDocuments(t *testing.T) {
	data := []byte(`# leading comment
---
apiVersion: kopf.dev/v1
kind: KopfExample
metadata:
  name: one
spec:
  field: value
---
# a document of comments only
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
  namespace: other
data:
  key: "---not a separator"
---
`)
	objs, err := parseManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, describe(o))
	}
	if want := []string{"KopfExample one", "ConfigMap other/two"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("objects = %v, want %v", got, want)
	}
	if v, _, _ := unstructured.NestedString(objs[1].Object, "data", "key"); v != "---not a separator" {
		t.Errorf("data.key = %q", v)
	}
}

func TestParseManifestsNeedsKindAndName(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nmetadata:\n  name: x\n",
		"kind: ConfigMap\nmetadata:\n  name: x\n",
		"apiVersion: v1\nkind: ConfigMap\n",
		"apiVersion: v1\nkind: [unclosed\n",
	} {
		if _, err := parseManifests([]byte(doc)); err == nil {
			t.Errorf("parseManifests(%q) succeeded, want an error", doc)
		}
	}
}

func TestStatusLine(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "KopfExample"}}
	if got := statusLine(obj); got != noStatus {
		t.Errorf("no status: %q", got)
	}
	obj.Object["status"] = map[string]any{"create_fn": map[string]any{"message": "hello world"}, "a": int64(1)}
	if got, want := statusLine(obj), `status: {"a":1,"create_fn":{"message":"hello world"}}`; got != want {
		t.Errorf("statusLine = %q, want %q", got, want)
	}
}

func TestSetEnvReplaces(t *testing.T) {
	got := setEnv([]string{"A=1", "KUBECONFIG=/old", "KUBECONFIGX=2"}, "KUBECONFIG", "/new")
	if want := []string{"A=1", "KUBECONFIGX=2", "KUBECONFIG=/new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("setEnv = %v, want %v", got, want)
	}
}

func TestExitCode(t *testing.T) {
	if got := exitCode(nil); got != 0 {
		t.Errorf("exitCode(nil) = %d", got)
	}
	if got := exitCode(errors.New("not started")); got != 1 {
		t.Errorf("exitCode(other) = %d", got)
	}
	if got := exitCode(exec.Command("sh", "-c", "exit 3").Run()); got != 3 {
		t.Errorf("exitCode(exit 3) = %d", got)
	}
	if got := exitCode(exec.Command("sh", "-c", "kill -TERM $$").Run()); got != 128+int(syscall.SIGTERM) {
		t.Errorf("exitCode(killed by SIGTERM) = %d", got)
	}
}
