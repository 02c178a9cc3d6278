package handlers_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gopf-dev/gopf/handlers"
)

// A create handler for a typed kind: the handler receives the Go type it
// declares, and its result goes to status.<id>.
func ExampleOnCreate() {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		c.Log.Info("deployment created", "replicas", d.Spec.Replicas)
		return map[string]any{"seen": true}, nil
	})
	fmt.Println(reg.Registrations()[0].Options.ID, reg.Err())
	// Output: create_fn <nil>
}

// A create handler for a kind without a Go type, named by resource.
func ExampleOnCreate_unstructured() {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ForResource("kopfexamples.kopf.dev"), handlers.ID("hello"))
	fmt.Println(reg.Registrations()[0].Options.ID, reg.Err())
	// Output: hello <nil>
}
