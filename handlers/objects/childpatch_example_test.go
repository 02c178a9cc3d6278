package objects_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// A handler of a kind without Go types (a Database, registered with
// ForKind) that keeps its StatefulSet's size and a label in step with the
// Database: no Get of the StatefulSet first, no JSON by hand.
func ExampleChildPatch() {
	reg := handlers.NewRegistry()
	handlers.OnField(reg, "spec.replicas", func(ctx context.Context, db *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		replicas, err := objects.Decode[int32](db, "spec.replicas")
		if err != nil {
			return nil, handlers.Permanent(err)
		}
		size := fmt.Sprint(replicas)
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: db.GetNamespace(), Name: db.GetName()}}
		patch := objects.NewChildPatch().
			Set("spec.replicas", replicas).
			SetLabel("example.com/size", &size)
		if err := c.Client.Patch(ctx, sts, patch); err != nil {
			return nil, fmt.Errorf("scaling StatefulSet %s: %w", sts.Name, err)
		}
		return map[string]any{"replicas": sts.Spec.Replicas}, nil // as the API server returned it
	}, handlers.ForKind("example.com", "v1", "Database"), handlers.Uses(&appsv1.StatefulSet{}, "patch"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// What a ChildPatch sends: a JSON merge patch of the fields set, with nil
// (a null) for those removed.
func ExampleChildPatch_data() {
	patch := objects.NewChildPatch().
		SetKeys([]string{"data", "index.html"}, "Hello").
		Set("metadata.annotations.owner", nil)
	data, err := patch.Data(nil)
	fmt.Println(string(data), err)
	// Output: {"data":{"index.html":"Hello"},"metadata":{"annotations":{"owner":null}}} <nil>
}

func ExampleDecode() {
	db := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Database",
		"spec":       map[string]any{"engine": "postgres", "replicas": int64(3)},
		"status":     map[string]any{"create_fn": map[string]any{"service": "orders"}},
	}}
	type databaseSpec struct {
		Engine   string `json:"engine"`
		Replicas int    `json:"replicas"`
		Backups  *bool  `json:"backups"`
	}
	spec, err := objects.Decode[databaseSpec](db, "spec")
	fmt.Printf("%+v %v\n", spec, err)
	service, err := objects.Decode[string](db, "status.create_fn.service")
	fmt.Println(service, err)
	backups, err := objects.Decode[*bool](db, "spec.backups") // absent: nil
	fmt.Println(backups, err)
	_, err = objects.Decode[int](db, "spec.engine")
	fmt.Println(err)
	// Output:
	// {Engine:postgres Replicas:3 Backups:<nil>} <nil>
	// orders <nil>
	// <nil> <nil>
	// decode "spec.engine": json: cannot unmarshal string into Go value of type int
}
