package kinds_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/test/kinds"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{kinds.CRDDir()}})
}

// TestTheKindsHaveTheShapesTheyClaim checks what the package promises: the
// API server prunes undeclared status fields of every kind, Widget and
// ClusterWidget have a status subresource and Gadget has none.
func TestTheKindsHaveTheShapesTheyClaim(t *testing.T) {
	scheme := envtest.NewScheme(clientgoscheme.AddToScheme, kinds.AddToScheme)
	env := envtest.New(t, scheme)
	ctx := context.Background()
	cases := []struct {
		obj       client.Object
		kind      string
		subStatus bool
	}{
		{&kinds.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: env.Namespace}}, "Widget", true},
		{&kinds.ClusterWidget{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace + "-cw"}}, "ClusterWidget", true},
		{&kinds.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: env.Namespace}}, "Gadget", false},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			if err := env.Client.Create(ctx, tc.obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), tc.obj) })
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(kinds.GroupVersion.WithKind(tc.kind))
			u.SetName(tc.obj.GetName())
			u.SetNamespace(tc.obj.GetNamespace())
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"phase":"Ready","gopf":{"lastHandled":"{}"}}}`))
			var err error
			if tc.subStatus {
				err = env.Client.Status().Patch(ctx, u, patch)
			} else {
				err = env.Client.Patch(ctx, u, patch)
			}
			if err != nil {
				t.Fatal(err)
			}
			if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Ready" {
				t.Errorf("status.phase = %q, want Ready: the declared field is kept", phase)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "gopf"); found {
				t.Errorf("status.gopf survived the write: the status schema should prune undeclared fields")
			}
			// A status subresource ignores status in a main-resource write.
			err = env.Client.Patch(ctx, u, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"phase":"Main"}}`)))
			if err != nil {
				t.Fatal(err)
			}
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			if got := phase == "Ready"; got != tc.subStatus {
				t.Errorf("after a main-resource write of status, phase = %q: status subresource = %v, want %v", phase, got, tc.subStatus)
			}
		})
	}
}

// TestTheGoTypesDropUnknownStatusFields checks the other half of the typed
// shape: decoding into the Go type loses fields it does not declare.
func TestTheGoTypesDropUnknownStatusFields(t *testing.T) {
	raw := map[string]any{"status": map[string]any{"phase": "Ready", "gopf": map[string]any{"lastHandled": "{}"}}}
	for _, obj := range []runtime.Object{&kinds.Widget{}, &kinds.ClusterWidget{}, &kinds.Gadget{}} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, obj); err != nil {
			t.Fatal(err)
		}
		back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(back, "status", "gopf"); found {
			t.Errorf("%T kept status.gopf", obj)
		}
	}
}
