package handlers_test

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
)

// A validating handler: it rejects deployments without an owner label with
// a message the client sees, and warns about a single replica. The label
// filter is passed to the API server as the webhook's object selector, so
// deployments of other apps never reach the operator.
func ExampleOnValidate() {
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(ctx context.Context, d *appsv1.Deployment, a *handlers.Admission[*appsv1.Deployment]) error {
		if d.Labels["owner"] == "" {
			return handlers.Deny(http.StatusUnprocessableEntity, "every deployment needs an owner label")
		}
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 1 {
			a.Warn("a single replica is not highly available")
		}
		return nil
	}, handlers.ID("require-owner"), handlers.Labels{"app": "shop"})

	fmt.Println(reg.Err())
	// Output: <nil>
}

// A mutating handler: it fills in a default by changing the object it
// receives; gopf answers the API server with the difference as a JSON
// patch. A second mutating handler of the kind would see this one's change.
func ExampleOnMutate() {
	reg := handlers.NewRegistry()
	handlers.OnMutate(reg, func(ctx context.Context, pod *corev1.Pod, a *handlers.Admission[*corev1.Pod]) error {
		if pod.Spec.PriorityClassName == "" {
			pod.Spec.PriorityClassName = "standard"
		}
		if a.Operation == admissionv1.Create {
			if err := a.Patch.Set("metadata.annotations.created-by", a.UserInfo.Username); err != nil {
				return err
			}
		}
		return nil
	}, handlers.Operations(admissionv1.Create))

	fmt.Println(reg.Err())
	// Output: <nil>
}
