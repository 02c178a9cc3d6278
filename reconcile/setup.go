package reconcile

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gopf-dev/gopf/handlers"
)

// Storage says where gopf keeps its per-object state.
type Storage int

const (
	// StorageAuto keeps the state in status.<StatusField> when the kind has
	// a status subresource (so results and state cost one request
	// together), and in annotations otherwise. The default.
	StorageAuto Storage = iota
	// StorageStatus always keeps the state in status.<StatusField>.
	StorageStatus
	// StorageAnnotations always keeps the state in annotations under
	// Prefix; results still go to status, so a create costs one more write.
	StorageAnnotations
)

// Options configure how a registry is compiled onto a manager. The zero
// value is ready to use.
type Options struct {
	// MaxConcurrentReconciles is how many objects of one kind are handled at
	// once. One object is never handled by two reconciles at once.
	// Default: 16 (controller-runtime's own default is 1, which makes one slow
	// handler stall every other object of its kind).
	MaxConcurrentReconciles int

	// Prefix is the prefix of gopf's annotations (and, later, finalizer).
	// Default: "gopf.dev".
	Prefix string

	// StatusField is the field under status where gopf keeps its state for
	// kinds with a status subresource. Default: "gopf".
	StatusField string

	// Storage says where the state is kept. Default: StorageAuto.
	Storage Storage

	// DefaultBackoff is the delay before retrying a handler after an error
	// that did not say how long to wait, unless the handler sets its own
	// Backoff. Default: 60 s, as in Kopf.
	DefaultBackoff time.Duration

	// ConsistencyTimeout is how long a reconcile waits for the cache to show
	// gopf's own last write before it acts on what the cache holds. It stops
	// handlers from running twice for one change when the cache lags behind.
	// Default: 5 s.
	ConsistencyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 16
	}
	if o.Prefix == "" {
		o.Prefix = "gopf.dev"
	}
	if o.StatusField == "" {
		o.StatusField = "gopf"
	}
	if o.DefaultBackoff <= 0 {
		o.DefaultBackoff = 60 * time.Second
	}
	if o.ConsistencyTimeout <= 0 {
		o.ConsistencyTimeout = 5 * time.Second
	}
	return o
}

// Setup compiles the registrations of reg into one controller per watched
// kind and adds them to mgr. It fails, naming the handler, for a bad
// registration, a Go type missing from the manager's scheme, or a kind the
// API server does not serve. Setup asks the API server which kinds exist, so
// it needs a reachable API server.
func Setup(mgr manager.Manager, reg *handlers.Registry, opts Options) error {
	if err := reg.Err(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("gopf: creating a discovery client: %w", err)
	}

	var errs []error
	byKind := map[schema.GroupVersionKind]*kindController{}
	var order []schema.GroupVersionKind
	for _, r := range reg.Registrations() {
		gvk, err := resolveKind(mgr, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
			continue
		}
		kc, ok := byKind[gvk]
		if !ok {
			kc, err = newKindController(mgr, disco, gvk, r, opts)
			if err != nil {
				errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
				continue
			}
			byKind[gvk] = kc
			order = append(order, gvk)
		}
		kc.add(r)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, gvk := range order {
		kc := byKind[gvk]
		b := ctrl.NewControllerManagedBy(mgr).
			Named(kc.name).
			For(kc.newObject()).
			WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles})
		if len(kc.spawned) > 0 {
			kc.spawner = newSpawner(kc, opts.MaxConcurrentReconciles)
			if err := mgr.Add(kc.spawner); err != nil {
				return fmt.Errorf("gopf: adding the timers and daemons of %s: %w", gvk, err)
			}
			b = b.WatchesRawSource(source.Channel(kc.spawner.wake, &handler.EnqueueRequestForObject{}))
		}
		if err := b.Complete(kc); err != nil {
			return fmt.Errorf("gopf: starting the controller for %s: %w", gvk, err)
		}
	}
	return nil
}

// resolveKind finds the group/version/kind a registration is for.
func resolveKind(mgr manager.Manager, r *handlers.Registration) (schema.GroupVersionKind, error) {
	mapper := mgr.GetRESTMapper()
	o := r.Options
	switch {
	case !r.Unstructured:
		gvk, err := apiutil.GVKForObject(r.NewObject(), mgr.GetScheme())
		if err != nil {
			return gvk, fmt.Errorf("the Go type %T is not in the manager's scheme (add its package's AddToScheme): %w", r.NewObject(), err)
		}
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return gvk, fmt.Errorf("kind %s is not served by the API server (is its CRD installed?): %w", gvk, err)
		}
		return gvk, nil
	case !o.Kind.Empty():
		if _, err := mapper.RESTMapping(o.Kind.GroupKind(), o.Kind.Version); err != nil {
			return o.Kind, fmt.Errorf("kind %s is not served by the API server (is its CRD installed?): %w", o.Kind, err)
		}
		return o.Kind, nil
	default:
		full, partial := schema.ParseResourceArg(strings.ToLower(o.Resource))
		if full != nil {
			if gvk, err := mapper.KindFor(*full); err == nil {
				return gvk, nil
			}
		}
		gvk, err := mapper.KindFor(partial.WithVersion(""))
		if err != nil {
			return gvk, fmt.Errorf("resource %q is not served by the API server: %w", o.Resource, err)
		}
		return gvk, nil
	}
}

// newKindController prepares the controller of one kind; proto is the first
// registration for it and decides the Go type objects are read into.
func newKindController(mgr manager.Manager, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind, proto *handlers.Registration, opts Options) (*kindController, error) {
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("kind %s is not served by the API server: %w", gvk, err)
	}
	hasStatus, err := hasStatusSubresource(disco, gvk.GroupVersion(), mapping.Resource.Resource)
	if err != nil {
		return nil, err
	}
	kc := &kindController{
		name:      "gopf-" + strings.ToLower(gvk.Kind) + nonEmptyDot(gvk.Group),
		gvk:       gvk,
		opts:      opts,
		reader:    mgr.GetCache(),
		writer:    mgr.GetClient(),
		recorder:  mgr.GetEventRecorder("gopf"),
		hasStatus: hasStatus,
		finalizer: opts.Prefix + "/finalizer",
		log:       mgr.GetLogger().WithValues("controller", "gopf-"+strings.ToLower(gvk.Kind)+nonEmptyDot(gvk.Group)),
		memory:    newMemories(),
	}
	if proto.Unstructured {
		kc.newObject = func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		}
	} else {
		kc.newObject = proto.NewObject
	}
	switch {
	case opts.Storage == StorageStatus, opts.Storage == StorageAuto && hasStatus:
		kc.store = statusStorage{field: opts.StatusField}
	default:
		kc.store = annotationStorage{prefix: opts.Prefix}
	}
	return kc, nil
}

// add puts a registration in its place: change handlers or level handlers;
// fields they name are kept in the essence.
func (k *kindController) add(r *handlers.Registration) {
	switch r.HandlerKind() {
	case "reconcile":
		k.level = append(k.level, r)
	case "timer", "daemon":
		k.spawned = append(k.spawned, r)
	default:
		k.change = append(k.change, r)
	}
	if r.Options.Field != "" {
		k.extra = append(k.extra, strings.Split(r.Options.Field, "."))
	}
}

// hasStatusSubresource asks discovery whether resource has a status
// subresource.
func hasStatusSubresource(disco discovery.DiscoveryInterface, gv schema.GroupVersion, resource string) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return false, fmt.Errorf("discovering the resources of %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource+"/status" {
			return true, nil
		}
	}
	return false, nil
}

func nonEmptyDot(s string) string {
	if s == "" {
		return ""
	}
	return "." + s
}
