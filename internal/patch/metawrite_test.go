package patch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// metaServer answers every patch with the object's metadata at a new
// resourceVersion, and records the requests.
type metaServer struct {
	mu    sync.Mutex
	paths []string
	body  string
}

func (s *metaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	s.body = string(data)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",`+
		`"metadata":{"name":"kex","namespace":"ns","resourceVersion":"8","finalizers":["kopf.dev/finalizer"]}}`)
}

// The kind's REST mapping is looked up when its controller is set up, not
// at every write: each lookup in the manager's mapper asks every API group
// the cluster serves. The sender here has a mapping and no client at all,
// so any write through the client would panic.
func TestGopfsOwnPatchesGoStraightToTheKindsResourceAndReadBackOnlyMetadata(t *testing.T) {
	s := &metaServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	mapping := &meta.RESTMapping{
		Resource: schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"},
		Scope:    meta.RESTScopeNamespace,
	}
	sender := New(kopfv1.GroupVersion.WithKind("KopfExample"), true, nil)
	if err := sender.Direct(&rest.Config{Host: srv.URL}, srv.Client(), mapping); err != nil {
		t.Fatal(err)
	}
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
