// Command all-at-once is one operator that uses most of gopf together, as
// Kopf's 99-all-at-once example does. For each KopfExample it keeps a child
// ConfigMap <name>-items holding spec.items, and around that:
//
//   - operator-level handlers: OnStartup, OnCleanup, OnProbe (live objects);
//   - change handlers: create (makes the child, adopted), update (syncs it),
//     a field handler on spec.field (reads an index), delete, resume;
//   - sub-handlers, one per item, and a handler that fails once on purpose;
//   - a level handler (OnReconcile with Owns) that recreates a deleted child;
//   - an index of KopfExamples by spec.field, an event spy, a daemon and a
//     timer that share the object's memo;
//   - Kubernetes Events.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func main() {
	gopf.Main(registry(10*time.Second), kopfv1.AddToScheme)
}

// operator is the state the handlers share.
type operator struct {
	period time.Duration // of the daemon and the timer

	mu      sync.Mutex
	started time.Time
	live    map[string]bool // namespace/name of the objects handled

	byField handlers.Index[string, string] // object names by spec.field
}

// registry registers every handler; period paces the daemon and the timer.
// The handlers read and write the children with c.Client, the manager's
// client.
func registry(period time.Duration) *handlers.Registry {
	op := &operator{period: period, live: map[string]bool{}}
	reg := handlers.NewRegistry()

	// Operator-level handlers.
	handlers.OnStartup(reg, func(ctx context.Context, c *handlers.Cause) error {
		op.mu.Lock()
		defer op.mu.Unlock()
		op.started = time.Now()
		return nil
	}, handlers.ID("startup"))
	handlers.OnCleanup(reg, func(ctx context.Context, c *handlers.Cause) error {
		c.Log.Info("stopping", "objects", len(op.objects()))
		return nil
	}, handlers.ID("cleanup"))
	handlers.OnProbe(reg, func(ctx context.Context, c *handlers.Cause) (any, error) {
		return map[string]any{"objects": op.objects()}, nil
	}, handlers.ID("live_objects"))

	// In-memory views: an index and a spy on the raw events.
	op.byField = handlers.OnIndex(reg, "by_field", func(obj *kopfv1.KopfExample, _ *handlers.Cause) map[string]string {
		return map[string]string{obj.Spec.Field: obj.Name}
	})
	handlers.OnEvent(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) error {
		c.Memo.Update("events", func(old any) any { n, _ := old.(int); return n + 1 })
		return nil
	}, handlers.ID("spy"))

	// Change handlers.
	handlers.OnCreate(reg, op.create, handlers.ID("create"))
	handlers.OnCreate(reg, perItem, handlers.ID("items"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		if c.Retry == 0 {
			return nil, handlers.Temporary(errors.New("not ready at the first attempt"), 100*time.Millisecond)
		}
		return map[string]any{"attempts": c.Retry + 1}, nil
	}, handlers.ID("flaky"), handlers.Retries(5))
	handlers.OnUpdate(reg, update, handlers.ID("update"))
	handlers.OnField(reg, "spec.field", op.siblings, handlers.ID("siblings"), handlers.Value(handlers.Present))
	handlers.OnDelete(reg, op.delete, handlers.ID("delete"))
	handlers.OnResume(reg, op.resume, handlers.ID("resume"))

	// A level handler: runs on every reconcile, also when the child changes.
	handlers.OnReconcile(reg, repair, handlers.ID("repair"), handlers.Owns(&corev1.ConfigMap{}))

	// Background work sharing the object's memo.
	handlers.OnDaemon(reg, op.heartbeat, handlers.ID("heartbeat"), handlers.CancellationBackoff(time.Second))
	handlers.OnTimer(reg, 0, report, handlers.ID("report"), handlers.Idle(period))
	return reg
}

// objects lists the live objects, sorted.
func (op *operator) objects() []string {
	op.mu.Lock()
	defer op.mu.Unlock()
	out := make([]string, 0, len(op.live))
	for k := range op.live {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (op *operator) track(c *handlers.Cause, live bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if live {
		op.live[c.Namespace+"/"+c.Name] = true
	} else {
		delete(op.live, c.Namespace+"/"+c.Name)
	}
}

// child is the ConfigMap an object wants.
func child(obj *kopfv1.KopfExample) *corev1.ConfigMap {
	data := map[string]string{}
	for i, item := range obj.Spec.Items {
		data[fmt.Sprintf("item-%d", i)] = item
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name + "-items"}, Data: data}
}

// ensureChild creates the child unless it exists, and reports whether it
// created it.
func ensureChild(ctx context.Context, k8s client.Client, obj *kopfv1.KopfExample) (*corev1.ConfigMap, bool, error) {
	cm := child(obj)
	if err := objects.Adopt(obj, cm); err != nil {
		return nil, false, err
	}
	err := k8s.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		return cm, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
	}
	return cm, true, nil
}

func (op *operator) create(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	cm, _, err := ensureChild(ctx, c.Client, obj)
	if err != nil {
		return nil, err
	}
	op.track(c, true)
	c.Info("Created", "made ConfigMap %s", cm.Name)
	return map[string]any{"child": cm.Name}, nil
}

// perItem declares one sub-handler per item.
func perItem(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	for _, item := range obj.Spec.Items {
		c.Register(item, func(ctx context.Context, sc *handlers.Cause) (any, error) {
			return map[string]any{"length": len(item)}, nil
		})
	}
	return nil, nil
}

// update brings the child's data in line with spec.items.
func update(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	want := child(obj)
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(want), cm); err != nil {
		return nil, client.IgnoreNotFound(err) // repair recreates it
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data = want.Data
	if err := c.Client.Patch(ctx, cm, patch); err != nil {
		return nil, err
	}
	return map[string]any{"changes": len(c.Diff)}, nil
}

// siblings counts the objects with the same spec.field, from the index.
func (op *operator) siblings(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"field": c.New, "objects": len(op.byField.Get(c.Indexes, obj.Spec.Field))}, nil
}

func (op *operator) delete(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	op.track(c, false)
	c.Info("Deleted", "the garbage collector removes ConfigMap %s-items", obj.Name)
	return nil, nil
}

func (op *operator) resume(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	op.track(c, true)
	return nil, nil
}

// repair recreates a child that went missing. The cache it reads from may
// not show a child created a moment ago, so only a child that the create
// call really made counts as repaired.
func repair(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (reconcile.Result, error) {
	if obj.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	cm := &corev1.ConfigMap{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Name + "-items"}, cm)
	if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	_, created, err := ensureChild(ctx, c.Client, obj)
	if created {
		c.Warn("Repaired", "ConfigMap %s-items was missing", obj.Name)
	}
	return reconcile.Result{}, err
}

// heartbeat counts its beats in the object's memo until asked to stop.
func (op *operator) heartbeat(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
	for d.Sleep(op.period) {
		c.Memo.Update("beats", func(old any) any { n, _ := old.(int); return n + 1 })
	}
	return nil
}

// report writes what the spy and the daemon counted, once the object has
// been quiet for a while.
func report(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
	return map[string]any{"events": c.Memo.Get("events"), "beats": c.Memo.Get("beats")}, nil
}
