package handlers_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A create handler for a kind without a Go type, named by resource.
func ExampleOnCreate_unstructured() {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ForResource("kopfexamples.kopf.dev"), handlers.ID("hello"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// An update handler narrowed to one field: it runs only when spec.replicas
// changes, and receives the old and new values.
func ExampleOnUpdate() {
	reg := handlers.NewRegistry()
	handlers.OnUpdate(reg, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		c.Log.Info("scaled", "from", c.Old, "to", c.New)
		return nil, nil
	}, handlers.Field("spec.replicas"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A delete handler: gopf holds the object with a finalizer until the handler
// has succeeded.
func ExampleOnDelete() {
	reg := handlers.NewRegistry()
	handlers.OnDelete(reg, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		return nil, cleanUpOutsideTheCluster(d.Name)
	}, handlers.Retries(5))
	fmt.Println(reg.Err())
	// Output: <nil>
}

func cleanUpOutsideTheCluster(string) error { return nil }

// A resume handler: it runs once per operator process for objects handled
// before, e.g. to rebuild in-memory state after a restart.
func ExampleOnResume() {
	reg := handlers.NewRegistry()
	handlers.OnResume(reg, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		c.Memo.Set("known", true)
		return nil, nil
	}, handlers.Deleted())
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A field handler with filters: it fires when the label app of a labelled
// deployment changes from "old" to anything else.
func ExampleOnField() {
	reg := handlers.NewRegistry()
	handlers.OnField(reg, "metadata.labels.app", func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		return map[string]any{"previousApp": c.Old}, nil
	}, handlers.OldValue("old"), handlers.NewValue(handlers.Present), handlers.Labels{"team": handlers.Present})
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A level-based handler beside the change handlers: it runs on every
// reconcile, like a plain Reconciler.
func ExampleOnReconcile() {
	reg := handlers.NewRegistry()
	handlers.OnReconcile(reg, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}, handlers.When(func(d *appsv1.Deployment, _ *handlers.Cause) bool { return d.Spec.Paused }))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// Sub-handlers: the parent declares one child per item; each child has its
// own progress and retries.
func ExampleCause_Register() {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		for key := range cm.Data {
			c.Register(key, func(ctx context.Context, sc *handlers.Cause) (any, error) {
				return map[string]any{"done": true}, nil // lands in status.<parent>/<key>
			})
		}
		return nil, nil
	}, handlers.ID("per_key"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A timer: every minute per object, only once the object has been quiet for
// ten seconds. The result is written only when it changes.
func ExampleOnTimer() {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Minute, func(ctx context.Context, d *appsv1.Deployment, c *handlers.Cause) (any, error) {
		return map[string]any{"healthy": d.Status.AvailableReplicas > 0}, nil
	}, handlers.Idle(10*time.Second), handlers.Sharp())
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A daemon: a long-running function per object that returns when asked to
// stop.
func ExampleOnDaemon() {
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*appsv1.Deployment], c *handlers.Cause) error {
		for d.Sleep(30 * time.Second) {
			c.Log.Info("still here", "replicas", d.Object().Spec.Replicas)
		}
		c.Log.Info("stopping", "reason", d.StopReason())
		return nil
	}, handlers.CancellationTimeout(time.Minute))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// An event handler sees every watch event of the selected objects; it keeps
// no state and is never retried.
func ExampleOnEvent() {
	reg := handlers.NewRegistry()
	handlers.OnEvent(reg, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) error {
		c.Log.Info("pod event", "event", c.Event, "phase", pod.Status.Phase)
		return nil
	}, handlers.Labels{"app": handlers.Present})
	fmt.Println(reg.Err())
	// Output: <nil>
}

// An index of pods by node, read by another handler through the Index
// that OnIndex returns and the indexes in its Cause.
func ExampleOnIndex() {
	reg := handlers.NewRegistry()
	podsByNode := handlers.OnIndex(reg, "pods-by-node", func(pod *corev1.Pod, _ *handlers.Cause) map[string]string {
		return map[string]string{pod.Spec.NodeName: pod.Name}
	})
	handlers.OnCreate(reg, func(ctx context.Context, node *corev1.Node, c *handlers.Cause) (any, error) {
		return map[string]any{"pods": podsByNode.Get(c.Indexes, node.Name)}, nil // []string
	})
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A flat index collects one value per object, with no keys: its one key
// is nil. The Index that OnFlatIndex returns reads it typed.
func ExampleOnFlatIndex() {
	reg := handlers.NewRegistry()
	nodeNames := handlers.OnFlatIndex(reg, "node-names", func(node *corev1.Node, _ *handlers.Cause) string { return node.Name })
	handlers.OnCreate(reg, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		return map[string]any{"nodes": nodeNames.Get(c.Indexes, nil)}, nil // []string
	})
	fmt.Println(reg.Err())
	// Output: <nil>
}

// Index keys of any comparable type, read typed through the Index that
// OnIndex returns.
func ExampleIndex() {
	type podKey struct{ Namespace, App string }
	reg := handlers.NewRegistry()
	byApp := handlers.OnIndex(reg, "pods-by-app", func(pod *corev1.Pod, _ *handlers.Cause) map[podKey]string {
		return map[podKey]string{{pod.Namespace, pod.Labels["app"]}: pod.Name}
	})
	handlers.OnCreate(reg, func(ctx context.Context, svc *corev1.Service, c *handlers.Cause) (any, error) {
		pods := byApp.Get(c.Indexes, podKey{svc.Namespace, svc.Spec.Selector["app"]}) // []string
		return map[string]any{"pods": pods}, nil
	})
	fmt.Println(reg.Err())
	// Output: <nil>
}

// Operator-level handlers: a startup handler that fills the operator's
// memo before any object is handled, a cleanup handler for a graceful stop,
// and a probe for the health checks.
func ExampleOnStartup() {
	reg := handlers.NewRegistry()
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		c.Memo.Set("region", "eu-1")
		return nil
	}, handlers.Retries(5), handlers.Backoff(time.Second))
	handlers.OnCleanup(reg, func(ctx context.Context, c *handlers.Cause) error {
		c.Log.Info("bye")
		return nil
	})
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return c.Memo.Get("region"), nil
	}, handlers.ID("region"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// An unstructured handler of a kind named by resource, as kubectl names it:
// "secrets.v1." is the core group's Secrets (the empty group after the
// version's dot), "deployments.v1.apps" would be the apps group's. Kinds
// chosen by configuration (a flag, a config file) have no Go type:
// UsesResource (or UsesKind) declares what the handler does with them, so
// that --print-rbac grants it.
func ExampleForResource() {
	resource := "secrets.v1." // from the operator's configuration
	reg := handlers.NewRegistry()
	handlers.OnUpdate(reg, func(ctx context.Context, s *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		c.Log.Info("secret changed", "type", s.Object["type"])
		return nil, nil
	}, handlers.ForResource(resource), handlers.UsesResource(resource, "create", "update", "delete"))
	fmt.Println(reg.Err())
	// Output: <nil>
}

// A filter that reads an index: ConfigMaps are handled only when a Secret
// names them in its annotation example.com/configmap.
func ExampleWhen() {
	reg := handlers.NewRegistry()
	wanted := handlers.OnIndex(reg, "wanted", func(s *corev1.Secret, _ *handlers.Cause) map[string]string {
		return map[string]string{s.Annotations["example.com/configmap"]: s.Name}
	})
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return map[string]any{"namedBy": wanted.Get(c.Indexes, cm.Name)}, nil
	}, handlers.When(func(cm *corev1.ConfigMap, c *handlers.Cause) bool {
		return len(wanted.Get(c.Indexes, cm.Name)) > 0
	}))
	fmt.Println(reg.Err())
	// Output: <nil>
}
