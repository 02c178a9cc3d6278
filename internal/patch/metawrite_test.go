package patch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// metaServer answers every patch with the object's metadata at a new
// resourceVersion, and records the requests.
type metaServer struct {
	mu     sync.Mutex
	paths  []string
	body   string
	accept string
}

func (s *metaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	s.body = string(data)
	s.accept = r.Header.Get("Accept")
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",`+
		`"metadata":{"name":"kex","namespace":"ns","resourceVersion":"8","finalizers":["kopf.dev/finalizer"]}}`)
}

// directSender returns a KopfExample sender that writes straight to s,
// with no client at all, so that any write through a client would panic.
func directSender(t *testing.T, s *metaServer) *Sender {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	mapping := &meta.RESTMapping{
		Resource: schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"},
		Scope:    meta.RESTScopeNamespace,
	}
	sender := New(kopfv1.GroupVersion.WithKind("KopfExample"), true, nil)
	if err := sender.Direct(&rest.Config{Host: srv.URL}, srv.Client(), mapping); err != nil {
		t.Fatal(err)
	}
	return sender
}

// The kind's REST mapping is looked up when its controller is set up, not
// at every write: each lookup in the manager's mapper asks every API group
// the cluster serves. The sender here has a mapping and no client at all,
// so any write through the client would panic.
func TestGopfsOwnPatchesGoStraightToTheKindsResourceAndReadBackOnlyMetadata(t *testing.T) {
	s := &metaServer{}
	sender := directSender(t, s)
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Name: "kex", Namespace: "ns", ResourceVersion: "7"}}

	finalizer := map[string]any{"metadata": map[string]any{"finalizers": []string{"kopf.dev/finalizer"}, "resourceVersion": "7"}}
	if err := sender.Send(context.Background(), obj, finalizer, false, false); err != nil {
		t.Fatal(err)
	}
	if err := sender.Send(context.Background(), obj, map[string]any{"status": map[string]any{"x": 1}}, true, false); err != nil {
		t.Fatal(err)
	}

	want := []string{"PATCH /apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex", "PATCH /apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex/status"}
	if strings.Join(s.paths, "; ") != strings.Join(want, "; ") {
		t.Errorf("requests %q, want %q", s.paths, want)
	}
	if obj.ResourceVersion != "8" || len(obj.Finalizers) != 1 {
		t.Errorf("after the patches the object has resourceVersion %q and finalizers %q, want the response's", obj.ResourceVersion, obj.Finalizers)
	}
}

// An update of the whole object (the finalizer of an unstructured object)
// goes to the object's resource with the object as its body, and reads back
// only the metadata, as the patches do.
func TestAnUpdateSendsTheWholeObjectAndReadsBackOnlyMetadata(t *testing.T) {
	s := &metaServer{}
	sender := directSender(t, s)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex", "namespace": "ns", "resourceVersion": "7", "finalizers": []any{"kopf.dev/finalizer"}},
		"spec":     map[string]any{"field": "value", "unknown": map[string]any{"kept": true}},
	}}
	if err := sender.Replace(context.Background(), obj); err != nil {
		t.Fatal(err)
	}

	if want := "PUT /apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex"; strings.Join(s.paths, "; ") != want {
		t.Errorf("requests %q, want %q", s.paths, want)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(s.body), &sent); err != nil {
		t.Fatalf("the body %q is not JSON: %v", s.body, err)
	}
	if !reflect.DeepEqual(sent["spec"], obj.Object["spec"]) || sent["kind"] != "KopfExample" {
		t.Errorf("sent %s, want the whole object", s.body)
	}
	if m, _ := sent["metadata"].(map[string]any); m["resourceVersion"] != "7" {
		t.Errorf("sent metadata %v, want the resourceVersion that guards the update", m)
	}
	if !strings.HasPrefix(s.accept, "application/json;as=PartialObjectMetadata") {
		t.Errorf("Accept %q, want the metadata alone", s.accept)
	}
	if obj.GetResourceVersion() != "8" {
		t.Errorf("after the update the object has resourceVersion %q, want the response's", obj.GetResourceVersion())
	}
}
