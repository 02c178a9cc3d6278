package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Storage is reconcile.Storage: where gopf keeps its per-object state.
type Storage int

// The values of reconcile.Storage.
const (
	StorageAuto Storage = iota
	StorageStatus
	StorageAnnotations
	StorageKopf
)

// Options are reconcile.Options, field for field (OptionsFrom copies
// them), with the defaults applied by withDefaults.
type Options struct {
	MaxConcurrentReconciles int
	Prefix                  string
	StatusField             string
	Storage                 Storage
	KopfPrefix              string
	KopfFinalizer           string
	DefaultBackoff          time.Duration
	LogEvents               LogEvents
	EventsOff               bool
	EventComponent          string
	Memo                    map[string]any
	Namespaces              []string
	CleanupTimeout          time.Duration
	ProbeCache              time.Duration
	Peering                 *peering.Options
	ConsistencyTimeout      time.Duration
}

// OptionsFrom copies public, a struct with the fields of Options under the
// same names and of convertible types (reconcile.Options), into Options. A
// field missing from public panics: reconcile's tests copy a full Options.
func OptionsFrom(public any) Options {
	var o Options
	src := reflect.ValueOf(public)
	dst := reflect.ValueOf(&o).Elem()
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		dst.Field(i).Set(src.FieldByName(f.Name).Convert(f.Type))
	}
	return o
}

func (o Options) WithDefaults() Options {
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 16
	}
	if o.Prefix == "" {
		o.Prefix = "gopf.dev"
	}
	if o.StatusField == "" {
		o.StatusField = "gopf"
	}
	if o.KopfPrefix == "" {
		o.KopfPrefix = state.DefaultKopfPrefix
	}
	if o.KopfFinalizer == "" {
		o.KopfFinalizer = state.DefaultKopfFinalizer
	}
	if o.DefaultBackoff <= 0 {
		o.DefaultBackoff = 60 * time.Second
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = 30 * time.Second
	}
	if o.ProbeCache <= 0 {
		o.ProbeCache = 10 * time.Second
	}
	if o.ConsistencyTimeout <= 0 {
		o.ConsistencyTimeout = 5 * time.Second
	}
	if o.EventComponent == "" {
		o.EventComponent = "gopf"
	}
	return o
}

// Setup is reconcile.Setup: it compiles the registrations of reg into one
// controller per watched kind (see lazyKinds for kinds not served yet) and
// adds them to mgr.
func Setup(mgr manager.Manager, reg *handlers.Registry, opts Options) error {
	if err := reg.Err(); err != nil {
		return err
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("gopf: creating a discovery client: %w", err)
	}

	sc, err := scope.New(opts.Namespaces)
	if err != nil {
		return fmt.Errorf("gopf: %w", err)
	}
	sh, err := newShared(mgr, reg, sc, opts)
	if err != nil {
		return err
	}
	if err := setupActivities(mgr, reg, sh, opts); err != nil {
		return err
	}
	kinds, pending, err := KindsOf(reg, mgr.GetScheme(), mgr.GetRESTMapper(), func(gvk schema.GroupVersionKind, proto *contract.Handler) (*KindController, error) {
		return newKindController(mgr, disco, gvk, proto, opts, sh)
	})
	if err != nil {
		return err
	}
	for _, kc := range kinds {
		if err := kc.start(mgr, opts); err != nil {
			return err
		}
	}
	return addLazyKinds(mgr, disco, reg, kinds, pending, opts, sh)
}

// validate checks the options Setup cannot default.
func (o Options) validate() error {
	if problems := validation.IsQualifiedName(o.EventComponent); len(problems) > 0 {
		return fmt.Errorf("gopf: EventComponent %q is not a valid reporting component: %s", o.EventComponent, strings.Join(problems, "; "))
	}
	if o.Peering != nil {
		return o.Peering.Validate()
	}
	return nil
}

// addLazyKinds adds to mgr, if there are any, the kinds that are not served
// yet (pending) and those that handlers choose among the served ones (see
// lazyKinds). A chosen kind is left to its own handlers when it has some:
// those of the kinds that started, and of the pending ones. The indexes of
// pending kinds exist from the start, as those of served kinds do.
func addLazyKinds(mgr manager.Manager, disco discovery.DiscoveryInterface, reg *handlers.Registry, started []*KindController,
	pending []*pendingKind, opts Options, sh *shared) error {
	selected := selectedOf(reg)
	if len(pending)+len(selected) == 0 {
		return nil
	}
	explicit := map[schema.GroupKind]bool{}
	for _, kc := range started {
		explicit[kc.Gvk.GroupKind()] = true
	}
	for _, p := range pending {
		explicit[p.gvk.GroupKind()] = true
	}
	for _, p := range pending {
		for _, r := range p.handlers {
			if r.Kind == spec.KindIndex {
				if sh.indexes.Get(r.Options.ID) != nil {
					return fmt.Errorf("gopf: %s: an index of that name exists already", r)
				}
				spec.AddIndex(sh.indexes, r.Options.ID)
			}
		}
	}
	if err := mgr.Add(newLazyKinds(mgr, disco, pending, selected, explicit, opts, sh)); err != nil {
		return fmt.Errorf("gopf: adding the kinds not served yet or chosen among those served: %w", err)
	}
	return nil
}

// selectedOf returns the object handlers of reg that choose their kinds
// among those served (ForCategory, ForKinds), which kindsOf leaves out.
func selectedOf(reg *handlers.Registry) []*contract.Handler {
	var out []*contract.Handler
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		if r.Options.Kinds != nil {
			out = append(out, r)
		}
	}
	return out
}

// KindsOf groups the object handlers of reg by the kind they resolve to,
// kinds in the order of their first registration; newKind makes the
// controller of a kind from that first registration. A kind that is known
// (by a Go type in the scheme or ForKind) but not served by the API server
// is pending: its handlers wait for its CRD (see lazyKinds). Errors name
// the handler.
func KindsOf(reg *handlers.Registry, scheme *runtime.Scheme, mapper meta.RESTMapper,
	newKind func(gvk schema.GroupVersionKind, proto *contract.Handler) (*KindController, error)) ([]*KindController, []*pendingKind, error) {
	var errs []error
	byKind := map[schema.GroupVersionKind]*KindController{}
	waiting := map[schema.GroupVersionKind]*pendingKind{}
	var order []*KindController
	var pending []*pendingKind
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		if r.Options.Kinds != nil {
			continue // see selectedOf
		}
		gvk, _, err := spec.ResolveKind(r, scheme, mapper)
		if err != nil && meta.IsNoMatchError(err) && !gvk.Empty() {
			p, ok := waiting[gvk]
			if !ok {
				p = &pendingKind{gvk: gvk}
				waiting[gvk] = p
				pending = append(pending, p)
			}
			p.handlers = append(p.handlers, r)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
			continue
		}
		kc, ok := byKind[gvk]
		if !ok {
			if kc, err = newKind(gvk, r); err != nil {
				errs = append(errs, fmt.Errorf("gopf: %s: %w", r, err))
				continue
			}
			byKind[gvk] = kc
			order = append(order, kc)
		}
		kc.Add(r)
	}
	return order, pending, errors.Join(errs...)
}

// start adds the kind's watcher (event handlers and indexes), spawner
// (timers and daemons) and controller (everything else) to the manager;
// each only if the kind has handlers for it.
func (k *KindController) start(mgr manager.Manager, opts Options) error {
	// Create the kind's informer now, so that the manager's cache sync
	// waits for it before anything else starts.
	if _, err := k.cache.GetInformer(context.Background(), k.NewObject(), cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("gopf: watching %s: %w", k.Gvk, err)
	}
	if len(k.events)+len(k.indexes) > 0 {
		w := &watcher{k: k, cache: k.cache, events: k.events, indexes: k.indexes}
		for _, r := range k.indexes {
			if k.shared.indexes.Get(r.Options.ID) != nil {
				return fmt.Errorf("gopf: %s: an index of that name exists already", r)
			}
			spec.AddIndex(k.shared.indexes, r.Options.ID)
		}
		if len(k.indexes) > 0 {
			k.shared.mu.Lock()
			k.shared.watchers = append(k.shared.watchers, w)
			k.shared.mu.Unlock()
		}
		if err := mgr.Add(w); err != nil {
			return fmt.Errorf("gopf: watching %s: %w", k.Gvk, err)
		}
	}
	if len(k.Change)+len(k.level)+len(k.Spawned) == 0 {
		return nil
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(k.Name).
		For(k.NewObject()).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles})
	if len(k.Spawned) > 0 {
		k.spawner = k.newSpawner(opts.MaxConcurrentReconciles)
		if err := mgr.Add(k.spawner); err != nil {
			return fmt.Errorf("gopf: adding the timers and daemons of %s: %w", k.Gvk, err)
		}
	}
	b = b.WatchesRawSource(source.Channel(k.wake, &ctrlhandler.EnqueueRequestForObject{}))
	seen := map[string]bool{}
	for _, r := range k.level { // Owns and Watches are options of OnReconcile
		for _, owned := range r.Options.Owned {
			if t := fmt.Sprintf("owns %T", owned); !seen[t] {
				seen[t] = true
				b = b.Owns(owned)
			}
		}
		for _, w := range r.Options.Watched {
			b = b.Watches(w.Object, ctrlhandler.EnqueueRequestsFromMapFunc(mapToRequests(w.Map)))
		}
	}
	k.shared.gate.whenOpened(func() {
		if ctx := k.shared.context(); ctx != nil {
			k.wakeAll(ctx)
		}
	})
	if err := b.Complete(k); err != nil {
		return fmt.Errorf("gopf: starting the controller for %s: %w", k.Gvk, err)
	}
	return nil
}

// setupActivities adds the operator-level handlers, the probe endpoints and
// peering to the manager.
func setupActivities(mgr manager.Manager, reg *handlers.Registry, sh *shared, opts Options) error {
	log := mgr.GetLogger().WithName("gopf")
	a := &activities{sh: sh, opts: opts, log: log}
	set := contract.SetOf(reg)
	a.startup, a.cleanup = set.Handlers(spec.KindStartup), set.Handlers(spec.KindCleanup)
	p := &prober{sh: sh, log: log, ttl: opts.ProbeCache, probes: set.Handlers(spec.KindProbe)}
	if err := mgr.Add(a); err != nil {
		return fmt.Errorf("gopf: adding the operator-level handlers: %w", err)
	}
	if len(p.probes) > 0 {
		if err := mgr.AddHealthzCheck("gopf-probes", p.Check); err != nil {
			return fmt.Errorf("gopf: adding the probes: %w", err)
		}
		if err := mgr.AddMetricsServerExtraHandler("/probes", p); err != nil {
			return fmt.Errorf("gopf: serving the probes: %w", err)
		}
	}
	if opts.Peering != nil {
		if err := mgr.Add(peering.New(mgr, sh, sh.scope, metrics.PeeringState.WithLabelValues(opts.Peering.Name), *opts.Peering, log)); err != nil {
			return fmt.Errorf("gopf: adding peering: %w", err)
		}
	}
	return nil
}

// mapToRequests adapts a Watches mapping to controller-runtime's.
func mapToRequests(fn func(ctx context.Context, obj client.Object) []types.NamespacedName) ctrlhandler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		names := fn(ctx, obj)
		out := make([]reconcile.Request, len(names))
		for i, n := range names {
			out[i] = reconcile.Request{NamespacedName: n}
		}
		return out
	}
}

// newKindController prepares the controller of one kind; proto is the first
// registration for it and decides the Go type objects are read into.
func newKindController(mgr manager.Manager, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind, proto *contract.Handler,
	opts Options, sh *shared) (*KindController, error) {
	kc, err := DescribeKind(mgr.GetRESTMapper(), disco, gvk, ObjectMaker(gvk, proto), opts)
	if err != nil {
		return nil, err
	}
	kc.reader = mgr.GetCache()
	kc.writer = mgr.GetClient()
	kc.recorder = eventRecorder(mgr, opts)
	kc.shared = sh
	kc.scheme = mgr.GetScheme()
	kc.wake = make(chan event.GenericEvent, 1024)
	kc.Log = mgr.GetLogger().WithValues("controller", kc.Name)
	kc.kopf.Log = kc.Log
	if opts.Storage == StorageAuto && kc.HasStatus && !kc.place.KeepsState() {
		kc.Log.Info("keeping gopf's state of this kind in annotations: its status cannot keep it", "reason", kc.place.State)
	}
	if !kc.place.Schema.Known {
		kc.Log.Info("the kind's CRD could not be read: gopf assumes its status keeps what the Go type keeps", "reason", kc.place.Schema.Why)
	}
	kc.memory = newMemories(sh)
	sh.operator.AddObjectMemos(gvk, kc.memory.find)
	kc.cache = mgr.GetCache()
	return kc, nil
}

// DescribeKind is what the controller of a kind knows without a manager:
// its name, Go type (newObject), finalizer and storage. The planner reads
// objects through it too, so that it reads stored state exactly as the
// controller does. It reads the kind's CRD, if it has one, to decide where
// the state lives (see placement.go).
func DescribeKind(mapper meta.RESTMapper, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind,
	newObject func() client.Object, opts Options) (*KindController, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("kind %s is not served by the API server: %w", gvk, err)
	}
	hasStatus, err := hasStatusSubresource(disco, gvk.GroupVersion(), mapping.Resource.Resource)
	if err != nil {
		return nil, err
	}
	kc := &KindController{
		Name:      "gopf-" + strings.ToLower(gvk.Kind) + nonEmptyDot(gvk.Group),
		Gvk:       gvk,
		Opts:      opts,
		HasStatus: hasStatus,
		Finalizer: opts.Prefix + "/finalizer",
		NewObject: newObject,
	}
	if err := kc.ChooseStorage(state.ReadKindSchema(context.Background(), disco, gvk, mapping.Resource.Resource)); err != nil {
		return nil, err
	}
	return kc, nil
}

// ChooseStorage sets where the controller keeps its state, from its
// options, whether the kind has a status subresource, and what its status
// keeps (s: the API server's schema; the Go type of k.newObject):
//
//   - StorageAuto keeps the state in status.<StatusField> when the kind has
//     a status subresource and both the API server and the Go type keep
//     that field, and in annotations otherwise;
//   - StorageStatus keeps it in status, and is an error where status
//     cannot keep it;
//   - StorageAnnotations keeps it in annotations;
//   - StorageKopf keeps it in Kopf's annotations, and reads nothing else.
//
// Whatever the place, gopf's other place and Kopf's state are read too
// (see kopfFallback), so that no object with a history looks new.
func (k *KindController) ChooseStorage(s state.KindSchema) error {
	opts := k.Opts
	k.kopf = &kopfstate.Store{Prefix: opts.KopfPrefix, Kind: k.Gvk.Kind, EssenceOf: k.essenceText, Log: logr.Discard()}
	k.place = state.NewStatusPlace(s, k.NewObject, opts.StatusField)
	inStatus, inAnnotations := state.StatusStorage{Field: opts.StatusField}, state.AnnotationStorage{Prefix: opts.Prefix}
	switch {
	case opts.Storage == StorageKopf:
		k.Store, k.Finalizer = k.kopf, opts.KopfFinalizer
	case opts.Storage == StorageStatus && !k.place.KeepsState():
		return fmt.Errorf("StorageStatus: gopf's state cannot be kept in status.%s of %s: %s; declare the field (an object with x-kubernetes-preserve-unknown-fields) or use StorageAuto",
			opts.StatusField, k.Gvk, k.place.State)
	case opts.Storage == StorageStatus, opts.Storage == StorageAuto && k.HasStatus && k.place.KeepsState():
		k.Store = kopfstate.Fallback{Storage: inStatus, Other: inAnnotations, Kopf: k.kopf}
	default:
		k.Store = kopfstate.Fallback{Storage: inAnnotations, Other: inStatus, Kopf: k.kopf}
	}
	return nil
}

// essenceText is the essence of obj as gopf stores it.
func (k *KindController) essenceText(obj map[string]any) string {
	data, _ := state.Marshal(state.Essence(obj, k.Opts.Prefix, k.Extra))
	return string(data)
}

// ObjectMaker returns the constructor of the objects of a kind: the Go type
// of its first registration proto, or unstructured objects.
func ObjectMaker(gvk schema.GroupVersionKind, proto *contract.Handler) func() client.Object {
	if !proto.Unstructured {
		return proto.NewObject
	}
	return func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
}

// Add puts a registration in its place: change handlers or level handlers;
// fields they name are kept in the essence.
func (k *KindController) Add(r *contract.Handler) {
	switch r.Kind {
	case spec.KindReconcile:
		k.level = append(k.level, r)
	case spec.KindTimer, spec.KindDaemon:
		k.Spawned = append(k.Spawned, r)
	case spec.KindEvent:
		k.events = append(k.events, r)
	case spec.KindIndex:
		k.indexes = append(k.indexes, r)
	default:
		k.Change = append(k.Change, r)
		k.kopf.Known(r.Options.ID)
	}
	if r.Options.Field != nil {
		k.Extra = append(k.Extra, r.Options.Field)
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
