// Command minimal is Kopf's minimal operator in Go: when a KopfExample is
// created, it logs and stores {"message": "hello world"} in
// status.create_fn.
package main

import (
	"context"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// The permissions this operator needs; `make manifests` turns them into
// config/rbac/role.yaml.
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Log.Info("a KopfExample was created", "field", obj.Spec.Field)
		return map[string]any{"message": "hello world"}, nil
	})
	return reg
}
