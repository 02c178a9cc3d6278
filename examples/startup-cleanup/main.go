// Command startup-cleanup shows the operator-level handlers of Kopf's
// 13-hooks example:
//
//   - OnStartup runs once before any object is handled. Here it loads the
//     operator's settings from the ConfigMap startup-cleanup (in the
//     namespace of POD_NAMESPACE, default "default"), retrying with
//     handlers.Temporary until it exists, and marks the ConfigMap as in use.
//     No handler runs before it has succeeded; a permanent failure stops the
//     operator.
//   - OnCleanup runs once when the operator stops gracefully, after the
//     handling of objects has stopped: it marks the ConfigMap as released.
//   - OnProbe adds an entry to the health endpoint: the probe results are
//     served as JSON at /probes on the metrics address, and a failing probe
//     fails /healthz.
//
// The create handler greets each KopfExample with the greeting from the
// settings.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// The settings ConfigMap and the annotation that says who uses it.
const (
	settingsName    = "startup-cleanup"
	stateAnnotation = "startup-cleanup.example.gopf.dev/state"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// c.Client reads through the manager's cache, which watches what it reads.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch

func main() {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	gopf.Main(registry(ns), kopfv1.AddToScheme)
}

// operator is what the handlers share: the settings the startup handler
// loads and the count the probe reports.
type operator struct {
	namespace string

	mu       sync.Mutex
	greeting string

	greeted atomic.Int64
}

// registry registers the handlers, which read and mark the settings
// ConfigMap in namespace with c.Client, the manager's client. It reads
// through the manager's cache, so namespace must be one the operator
// watches (all of them, unless --namespace says otherwise).
func registry(namespace string) *handlers.Registry {
	op := &operator{namespace: namespace}
	reg := handlers.NewRegistry()
	handlers.OnStartup(reg, op.loadSettings, handlers.ID("load_settings"))
	handlers.OnCleanup(reg, op.release, handlers.ID("release_settings"))
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return map[string]any{"greeted": op.greeted.Load()}, nil
	}, handlers.ID("greetings"))

	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		op.mu.Lock()
		defer op.mu.Unlock()
		op.greeted.Add(1)
		return map[string]any{"message": op.greeting + ", " + obj.Name}, nil
	}, handlers.ID("greet"))
	return reg
}

// loadSettings reads the greeting, waiting until the ConfigMap exists.
func (op *operator) loadSettings(ctx context.Context, c *handlers.Cause) error {
	var cm corev1.ConfigMap
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: op.namespace, Name: settingsName}, &cm)
	if apierrors.IsNotFound(err) {
		return handlers.Temporary(fmt.Errorf("waiting for ConfigMap %s/%s", op.namespace, settingsName), time.Second)
	}
	if err != nil {
		return err
	}
	op.mu.Lock()
	op.greeting = cm.Data["greeting"]
	op.mu.Unlock()
	c.Log.Info("settings loaded", "greeting", cm.Data["greeting"])
	return op.mark(ctx, c.Client, "in use")
}

// release marks the settings as no longer used.
func (op *operator) release(ctx context.Context, c *handlers.Cause) error {
	return op.mark(ctx, c.Client, "released")
}

// mark sets the state annotation of the settings ConfigMap.
func (op *operator) mark(ctx context.Context, k8s client.Client, state string) error {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = op.namespace, settingsName
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, stateAnnotation, state)
	return k8s.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(patch)))
}
