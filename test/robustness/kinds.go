package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/kinds"
)

// The label and finalizer keys the suite uses.
const (
	// RunLabel marks the objects of one run; every handler selects it, so
	// operators of runs side by side leave each other's objects alone.
	RunLabel = "robustness.gopf.dev/run"
	// ChangeLabel is the label OpLabel changes.
	ChangeLabel = "robustness.gopf.dev/label"
	// PatchedLabel is the label a handler armed with BehavePatch sets.
	PatchedLabel = "robustness.gopf.dev/patched"
	// ForeignFinalizer is the other writer's finalizer.
	ForeignFinalizer = "robustness.gopf.dev/other"
	// specAnnotation and watchedAnnotation stand for the spec and the
	// watched field on kinds whose spec has no free field (Namespace).
	specAnnotation    = "robustness.gopf.dev/spec"
	watchedAnnotation = "robustness.gopf.dev/watched"
)

// Class is a class of kinds the suite runs on: one kind standing for it,
// how its objects are made and changed, and how its handlers are
// registered.
type Class struct {
	// Name names the class in test names.
	Name string
	// GVK is the kind; Resource its resource, as request paths have it.
	GVK      schema.GroupVersionKind
	Resource string
	// Cluster is true for cluster-scoped kinds.
	Cluster bool
	// Terminating is true for kinds whose deleted objects never go in
	// envtest (Namespaces: no namespace controller runs).
	Terminating bool
	// Status is true when the kind has a status subresource.
	Status bool
	// Skip gives, for each storage that cannot work on the kind, why.
	Skip map[reconcile.Storage]string

	// specPath and watchedPath are where OpSpec and OpWatched write;
	// a path of nil means the kind's own setter (see setSpec).
	specPath, watchedPath []string
	// watchedInt says the watched field is a number: "w7" is written as 7.
	watchedInt bool
	// template returns the object's fixed content (e.g. a Pod's container).
	template func(u *unstructured.Unstructured)
	// register adds the handlers to reg, typed or unstructured.
	register func(reg *handlers.Registry, h handlerFunc, opts options)
}

// handlerFunc is the one function behind every handler of the suite: it
// gets the handler's id, the object as JSON-like map and the Cause.
type handlerFunc func(ctx context.Context, handler string, obj map[string]any, c *handlers.Cause) (any, error)

// options are the options every handler of a run gets.
type options struct {
	labels  handlers.Labels
	gvk     *schema.GroupVersionKind // the kind of unstructured handlers
	watched []string                 // the field handler's path
	daemon  daemonFunc               // the daemon
	timer   timerFunc                // the timer
}

// The kinds of test/kinds (Widget, ClusterWidget, Gadget) keep the spec
// field OpSpec changes in spec.color and the watched one in spec.size.
var widgetSpecPath, widgetWatchedPath = []string{"spec", "color"}, []string{"spec", "size"}

// Classes are the classes of kinds the suite covers.
var Classes = []Class{
	{
		Name: "KopfExample", GVK: kopfv1.GroupVersion.WithKind("KopfExample"), Resource: "kopfexamples", Status: true,
		specPath: []string{"spec", "field"}, watchedPath: []string{"spec", "duration"},
		register: registerTyped[*kopfv1.KopfExample],
	},
	{
		Name: "Unstructured", GVK: kopfv1.GroupVersion.WithKind("KopfExample"), Resource: "kopfexamples", Status: true,
		specPath: []string{"spec", "field"}, watchedPath: []string{"spec", "duration"},
		register: func(reg *handlers.Registry, h handlerFunc, opts options) {
			gvk := kopfv1.GroupVersion.WithKind("KopfExample")
			opts.gvk = &gvk
			registerTyped[*unstructured.Unstructured](reg, h, opts)
		},
	},
	{
		Name: "Widget", GVK: kinds.GroupVersion.WithKind("Widget"), Resource: "widgets", Status: true,
		specPath: widgetSpecPath, watchedPath: widgetWatchedPath, watchedInt: true,
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a typed status drops unknown fields: there is no status.gopf to keep state in"},
		register: registerTyped[*kinds.Widget],
	},
	{
		Name: "ClusterWidget", GVK: kinds.GroupVersion.WithKind("ClusterWidget"), Resource: "clusterwidgets", Status: true, Cluster: true,
		specPath: widgetSpecPath, watchedPath: widgetWatchedPath, watchedInt: true,
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a typed status drops unknown fields: there is no status.gopf to keep state in"},
		register: registerTyped[*kinds.ClusterWidget],
	},
	{
		Name: "Gadget", GVK: kinds.GroupVersion.WithKind("Gadget"), Resource: "gadgets",
		specPath: widgetSpecPath, watchedPath: widgetWatchedPath, watchedInt: true,
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a Gadget has no status subresource, and its typed status drops unknown fields"},
		register: registerTyped[*kinds.Gadget],
	},
	{
		Name: "ConfigMap", GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: "configmaps",
		specPath: []string{"data", "spec"}, watchedPath: []string{"data", "watched"},
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a ConfigMap has no status to keep state in"},
		register: registerTyped[*corev1.ConfigMap],
	},
	{
		Name: "Pod", GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: "pods", Status: true,
		watchedPath: []string{"metadata", "annotations", watchedAnnotation},
		template: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "app", "image": "example.invalid/app:s0"}}, "spec", "containers")
		},
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a Pod's status drops unknown fields: there is no status.gopf to keep state in"},
		register: registerTyped[*corev1.Pod],
	},
	{
		Name: "Namespace", GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: "namespaces", Status: true,
		Cluster: true, Terminating: true,
		specPath: []string{"metadata", "annotations", specAnnotation}, watchedPath: []string{"metadata", "annotations", watchedAnnotation},
		Skip:     map[reconcile.Storage]string{reconcile.StorageStatus: "a Namespace's status drops unknown fields: there is no status.gopf to keep state in"},
		register: registerTyped[*corev1.Namespace],
	},
}

// spec returns the object's spec value.
func (k Class) spec(obj map[string]any) string {
	if k.specPath == nil { // a Pod: the container's image tag
		containers, _, _ := unstructured.NestedSlice(obj, "spec", "containers")
		if len(containers) == 0 {
			return ""
		}
		image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
		return image[len("example.invalid/app:"):]
	}
	v, _, _ := unstructured.NestedString(obj, k.specPath...)
	return v
}

// setSpec sets the object's spec value.
func (k Class) setSpec(obj map[string]any, v string) {
	if k.specPath == nil {
		containers, _, _ := unstructured.NestedSlice(obj, "spec", "containers")
		containers[0].(map[string]any)["image"] = "example.invalid/app:" + v
		_ = unstructured.SetNestedSlice(obj, containers, "spec", "containers")
		return
	}
	_ = unstructured.SetNestedField(obj, v, k.specPath...)
}

// versions returns the values the generator wrote that obj shows.
func (k Class) versions(obj map[string]any) Versions {
	label, _, _ := unstructured.NestedString(obj, "metadata", "labels", ChangeLabel)
	var watched string
	if k.watchedInt {
		switch n := nested(obj, k.watchedPath).(type) {
		case int64:
			watched = "w" + strconv.FormatInt(n, 10)
		case float64: // decoded from a typed object's JSON
			watched = "w" + strconv.FormatInt(int64(n), 10)
		}
	} else {
		watched, _, _ = unstructured.NestedString(obj, k.watchedPath...)
	}
	return Versions{Spec: k.spec(obj), Label: label, Watched: watched}
}

// setVersions writes v into obj.
func (k Class) setVersions(obj map[string]any, v Versions) {
	k.setSpec(obj, v.Spec)
	_ = unstructured.SetNestedField(obj, v.Label, "metadata", "labels", ChangeLabel)
	if k.watchedInt {
		n, _ := strconv.ParseInt(strings.TrimPrefix(v.Watched, "w"), 10, 64)
		_ = unstructured.SetNestedField(obj, n, k.watchedPath...)
		return
	}
	_ = unstructured.SetNestedField(obj, v.Watched, k.watchedPath...)
}

// nested returns the value at path, or nil.
func nested(obj map[string]any, path []string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}

// newObject returns a new object of the class with the values v.
func (k Class) newObject(namespace, name, run string, v Versions) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(k.GVK)
	u.SetName(name)
	if !k.Cluster {
		u.SetNamespace(namespace)
	}
	u.SetLabels(map[string]string{RunLabel: run})
	if k.template != nil {
		k.template(u)
	}
	k.setVersions(u.Object, v)
	return u
}

// writesPerCall is what one handler call may cost in writes with storage s
// (see reconcile/doc.go, "Writes" and "Where state lives"): one request for
// results and state where both go to status or the kind keeps no results;
// two where state goes to annotations and results to status.
func (k Class) writesPerCall(s reconcile.Storage) int {
	if k.Status && (s == reconcile.StorageAnnotations || s == reconcile.StorageKopf) {
		return 2
	}
	return 1
}

// registerTyped registers the suite's five handlers for objects of type
// T: create, update, a field handler, delete and resume, all calling h;
// the daemon, opts.daemon; and the timer, opts.timer, every
// TimerInterval.
func registerTyped[T client.Object](reg *handlers.Registry, h handlerFunc, opts options) {
	call := func(id string) handlers.HandlerFunc[T] {
		return func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
			m, err := toMap(obj)
			if err != nil {
				return nil, handlers.Permanent(err)
			}
			return h(ctx, id, m, c)
		}
	}
	create := []handlers.CreateOption{handlers.ID(HandlerCreate), opts.labels}
	update := []handlers.UpdateOption{handlers.ID(HandlerUpdate), opts.labels}
	field := []handlers.UpdateOption{handlers.ID(HandlerField), opts.labels}
	del := []handlers.DeleteOption{handlers.ID(HandlerDelete), opts.labels}
	resume := []handlers.ResumeOption{handlers.ID(HandlerResume), opts.labels}
	daemon := []handlers.DaemonOption{handlers.ID(HandlerDaemon), opts.labels}
	timer := []handlers.TimerOption{handlers.ID(HandlerTimer), opts.labels}
	if opts.gvk != nil {
		k := handlers.ForKind(opts.gvk.Group, opts.gvk.Version, opts.gvk.Kind)
		create, update, field, del, resume = append(create, k), append(update, k), append(field, k), append(del, k), append(resume, k)
		daemon, timer = append(daemon, k), append(timer, k)
	}
	handlers.OnCreate(reg, call(HandlerCreate), create...)
	handlers.OnUpdate(reg, call(HandlerUpdate), update...)
	handlers.OnField(reg, opts.watched, call(HandlerField), field...)
	handlers.OnDelete(reg, call(HandlerDelete), del...)
	handlers.OnResume(reg, call(HandlerResume), resume...)
	handlers.OnDaemon(reg, func(_ context.Context, d *handlers.Daemon[T], c *handlers.Cause) error {
		return opts.daemon(c, d)
	}, daemon...)
	handlers.OnTimer(reg, TimerInterval, func(_ context.Context, _ T, c *handlers.Cause) (any, error) {
		return nil, opts.timer(c)
	}, timer...)
}

// toMap turns an object into its JSON form as a map.
func toMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	return m, nil
}

// carriesState reports whether a write of the operator to the status
// subresource (toStatus) or to the object carries gopf's stored state with
// storage s. Two writes do not: the status patch of results, where the
// state goes to annotations after it (gopf reads the object back and sends
// the state next), and, where the state is in status, an object patch (a
// handler's own patch, which the engine sends before the status patch with
// the state, or a finalizer's). A kill after either, before the state,
// cuts the calls.
func (k Class) carriesState(s reconcile.Storage, toStatus bool) bool {
	if toStatus {
		return k.writesPerCall(s) == 1
	}
	return !k.stateInStatus(s)
}

// stateInStatus reports whether gopf keeps the state in status.gopf with
// storage s: with StorageStatus, and with StorageAuto on a kind whose
// status keeps it (the classes that do not skip StorageStatus).
func (k Class) stateInStatus(s reconcile.Storage) bool {
	keeps := k.Status && k.Skip[reconcile.StorageStatus] == ""
	return keeps && (s == reconcile.StorageStatus || s == reconcile.StorageAuto)
}
