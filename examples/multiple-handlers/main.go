// Command multiple-handlers registers several handlers per cause, as Kopf's
// 05-handlers example does: three on create, two on update, one on a field,
// two on delete and one on resume. All handlers of a cause run in the same
// reconcile, in registration order, and their results reach the object in
// one status patch, each under its handler's id:
//
//   - a named function's id is its name (greet → status.greet);
//   - a function literal's id is <reason>_fn, or what handlers.ID says;
//   - a field handler's id ends in /<field> (fieldChanged/spec.field).
package main

import (
	"context"
	"time"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()

	handlers.OnCreate(reg, greet)
	handlers.OnCreate(reg, countItems)
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"at": c.Started.UTC().Format(time.RFC3339)}, nil
	}, handlers.ID("stamp"))

	handlers.OnUpdate(reg, describeChange)
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"changes": len(c.Diff)}, nil
	}) // id: update_fn

	// Runs on creation with spec.field set, and on updates that change it.
	handlers.OnField(reg, "spec.field", fieldChanged)

	// gopf's finalizer keeps the object until both have run. Their results
	// are not written: the object is going away.
	handlers.OnDelete(reg, farewell)
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Log.Info("cleaning up after", "items", obj.Spec.Items)
		return nil, nil
	}) // id: delete_fn

	// Once per operator process for objects handled before: after a restart.
	handlers.OnResume(reg, resumed)
	return reg
}

// greet is the first create handler.
func greet(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"message": "hello " + obj.Name}, nil
}

// countItems is the second create handler.
func countItems(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"items": len(obj.Spec.Items)}, nil
}

// describeChange reports the changes of an update, as (op, path, old, new).
func describeChange(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	changes := make([]string, 0, len(c.Diff))
	for _, d := range c.Diff {
		changes = append(changes, d.String())
	}
	return map[string]any{"diff": changes}, nil
}

// fieldChanged receives only spec.field's old and new values.
func fieldChanged(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"old": c.Old, "new": c.New}, nil
}

// farewell is the first delete handler.
func farewell(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	c.Log.Info("goodbye")
	return nil, nil
}

// resumed notes that this process has seen the object.
func resumed(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"message": "resumed " + obj.Name}, nil
}
