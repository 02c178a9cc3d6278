package state

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestAForbiddenReadOfTheCRDIsNamedForbidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"customresourcedefinitions.apiextensions.k8s.io \"widgets.example.com\" is forbidden: User \"op\" cannot get resource","reason":"Forbidden","code":403}`))
	}))
	defer srv.Close()
	disco, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := ReadKindSchema(context.Background(), disco, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "widgets")
	if s.Known || !strings.Contains(s.Why, "forbidden") || !strings.Contains(s.Why, "customresourcedefinitions") {
		t.Errorf("a forbidden read of the CRD is described as %q; want it named forbidden, with the permission it lacks", s.Why)
	}
}
