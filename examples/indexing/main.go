// Command indexing keeps an in-memory index of Pods and reads it from
// KopfExample handlers, as Kopf's 16-indexing example does.
//
// The index pods_by_app maps each value of the Pods' app label to the names
// of the Pods that carry it. gopf keeps it up to date on every watch event
// (an update costs only the keys of the one Pod that changed) and drops a
// Pod's entries when it goes; no handler runs before every index has seen
// the initial list. Handlers of any kind read it through the Index that
// OnIndex returns, typed: podsByApp.Get(c.Indexes, app). Here, for a
// KopfExample whose spec.field names an app, a create handler and a timer
// report that app's Pods in status.
package main

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

func main() {
	gopf.Main(registry(30*time.Second), kopfv1.AddToScheme)
}

// registry registers the index and its readers; the timer looks at the
// index every interval.
func registry(interval time.Duration) *handlers.Registry {
	reg := handlers.NewRegistry()

	// Only Pods with an app label are indexed.
	podsByApp := handlers.OnIndex(reg, "pods_by_app", func(pod *corev1.Pod, _ *handlers.Cause) map[string]string {
		return map[string]string{pod.Labels["app"]: pod.Name}
	}, handlers.Labels{"app": handlers.Present})

	// appPods returns the names of the Pods whose app label is spec.field,
	// in the index's order (by namespace/name).
	appPods := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		names := podsByApp.Get(c.Indexes, obj.Spec.Field)
		if names == nil {
			names = []string{}
		}
		return map[string]any{"app": obj.Spec.Field, "names": names}, nil
	}
	handlers.OnCreate(reg, appPods, handlers.ID("pods_at_creation"))
	handlers.OnTimer(reg, interval, appPods, handlers.ID("pods"))
	return reg
}
