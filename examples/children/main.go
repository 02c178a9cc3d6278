// Command children shows how an operator makes child objects: for every new
// KopfExample it creates a Pod that sleeps for spec.duration, adopted with
// handlers.Adopt (a controller owner reference, the owner's namespace, a name
// prefix and its labels), so the garbage collector removes the Pod with its
// owner. The Pod's name lands in status.create_fn.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// Adopt sets blockOwnerDeletion, which needs update on the owner's finalizers.
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=create

func main() {
	gopf.Main(registry(newClient()), kopfv1.AddToScheme)
}

// newClient returns a client for the cluster gopf.Main runs against
// (KUBECONFIG or the in-cluster configuration), as gopf hands handlers no
// client of its own. Without a cluster it returns nil: gopf.Main then says
// what is missing, and -h and --print-rbac, which need no cluster, work.
func newClient() client.Client {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil
	}
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a client:", err)
		os.Exit(1)
	}
	return k8s
}

// handlers registers the operator's handlers; k8s creates the children.
func registry(k8s client.Client) *handlers.Registry {
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
		if err := handlers.Adopt(obj, pod); err != nil {
			return nil, err
		}
		if err := k8s.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("creating the pod: %w", err)
		}
		c.Log.Info("created a child pod", "pod", pod.Name)
		return map[string]any{"pod": pod.Name, "uid": pod.UID}, nil
	})
	return reg
}
