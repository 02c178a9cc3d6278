// Command children shows how an operator makes child objects: for every new
// KopfExample it creates a Pod that sleeps for spec.duration, adopted with
// objects.Adopt (a controller owner reference, the owner's namespace, a name
// prefix and its labels), so the garbage collector removes the Pod with its
// owner. The Pod's name lands in status.create_fn.
package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// Adopt sets blockOwnerDeletion, which needs update on the owner's finalizers.
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=create

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

// handlers registers the operator's handlers. The create handler makes the
// child with c.Client, the manager's client.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		duration, err := time.ParseDuration(obj.Spec.Duration)
		if err != nil {
			return nil, handlers.Permanent(fmt.Errorf("spec.duration %q: %w", obj.Spec.Duration, err))
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "sleeper",
				Image:   "busybox",
				Command: []string{"sleep", fmt.Sprint(int(duration.Seconds()))},
			}},
		}}
		if err := objects.Adopt(obj, pod); err != nil {
			return nil, err
		}
		if err := c.Client.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("creating the pod: %w", err)
		}
		c.Log.Info("created a child pod", "pod", pod.Name)
		return map[string]any{"pod": pod.Name, "uid": pod.UID}, nil
	})
	return reg
}
