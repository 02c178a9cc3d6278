// Command events shows how handlers post Kubernetes Events about their
// object: c.Info for a Normal Event, c.Warn for a Warning, c.Exception for
// a Warning about an error, and c.Post for the general form. gopf posts them
// through the manager's event recorder, which aggregates repeated Events.
// Handler log lines do not become Events unless asked for
// (reconcile.Options.LogEvents), so an operator posts only what it means to.
package main

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Post(corev1.EventTypeNormal, "Greeting", "Hello from gopf")
		c.Info("Created", "%s has field %q", obj.Name, obj.Spec.Field)
		if len(obj.Spec.Items) == 0 {
			c.Warn("NoItems", "%s has no items to work on", obj.Name)
		}
		if _, err := lookUp(obj.Spec.Field); err != nil {
			c.Exception(err) // a Warning with reason "Error" and the error's text
		}
		c.Log.Info("log lines stay in the log")
		return nil, nil
	})
	return reg
}

// lookUp stands for a call to some service that can fail.
func lookUp(key string) (string, error) {
	return "", errors.New("the service does not know " + key)
}
