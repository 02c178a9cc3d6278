package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/kopfstate"
	"github.com/gopf-dev/gopf/internal/memory"
	"github.com/gopf-dev/gopf/internal/outside"
	"github.com/gopf-dev/gopf/internal/patch"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewKindController prepares the controller of one kind; proto is the first
// registration for it and decides the Go type objects are read into.
func NewKindController(mgr manager.Manager, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind, proto *contract.Handler,
	opts Options, sh *Shared) (*KindController, error) {
	facts, err := DiscoverKind(mgr.GetRESTMapper(), disco, gvk)
	if err != nil {
		return nil, err
	}
	kc, err := DescribeKind(gvk, ObjectMaker(gvk, proto), opts, facts)
	if err != nil {
		return nil, err
	}
	kc.Cache = mgr.GetCache()
	if sh.ShardCache != nil {
		kc.Cache = sh.ShardCache
	}
	kc.reader, kc.live = kc.Cache, mgr.GetAPIReader()
	kc.writer = mgr.GetClient()
	kc.out = patch.New(gvk, kc.hasStatus, kc.writer)
	if hc := mgr.GetHTTPClient(); hc != nil { // nil: a manager of a test's making; writes go through its client
		if err := kc.out.Direct(mgr.GetConfig(), hc, kc.mapping); err != nil {
			return nil, fmt.Errorf("gopf: a client for %s: %w", gvk, err)
		}
	}
	kc.recorder = sh.events
	kc.Shared = sh
	kc.scheme = mgr.GetScheme()
	kc.Wake = make(chan event.GenericEvent, 1024)
	kc.Log = mgr.GetLogger().WithValues("controller", kc.Name)
	kc.kopf.Log = kc.Log
	if opts.Storage == StorageAuto && kc.hasStatus && !kc.place.KeepsState() {
		kc.Log.Info("keeping gopf's state of this kind in annotations: its status cannot keep it", "reason", kc.place.State)
	}
	if !kc.place.Schema.Known {
		kc.Log.Info("the kind's CRD could not be read: gopf assumes its status keeps what the Go type keeps", "reason", kc.place.Schema.Why)
	}
	kc.Memory = memory.New(sh.Gate, sh.Memo)
	sh.operator.AddObjectMemos(gvk, kc.Memory.Find)
	if n, ok := kc.Cache.(Narrowed); ok && n.NarrowedBy(gvk) != nil && mgr.GetAPIReader() != nil {
		kc.outside = &outside.Finder{GVK: gvk, NewObject: kc.NewObject, Narrowed: n.NarrowedBy(gvk), Own: n.Own(), Live: mgr.GetAPIReader(),
			Held: kc.Memory, Holds: kc.holds, Scope: sh.Scope, Log: kc.Log}
	}
	return kc, nil
}

// KindFacts are what the API server says of a kind: its REST mapping,
// whether it has a status subresource, and what the status of its CRD
// keeps (see chooseStorage).
type KindFacts struct {
	Mapping   *meta.RESTMapping
	HasStatus bool
	Schema    state.KindSchema
}

// DiscoverKind asks the API server for the facts of kind gvk: its mapping,
// its status subresource, and its CRD, if it has one.
func DiscoverKind(mapper meta.RESTMapper, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind) (KindFacts, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return KindFacts{}, fmt.Errorf("kind %s is not served by the API server: %w", gvk, err)
	}
	hasStatus, err := hasStatusSubresource(disco, gvk.GroupVersion(), mapping.Resource.Resource)
	if err != nil {
		return KindFacts{}, err
	}
	s := state.ReadKindSchema(context.Background(), disco, gvk, mapping.Resource.Resource)
	return KindFacts{Mapping: mapping, HasStatus: hasStatus, Schema: s}, nil
}

// DescribeKind is what the controller of a kind knows without a manager:
// its name, Go type (newObject), finalizer and storage, which the facts
// of the kind decide. The planner reads objects through it too (see
// Inspect), so that it reads stored state exactly as the controller does.
func DescribeKind(gvk schema.GroupVersionKind, newObject func() client.Object, opts Options, facts KindFacts) (*KindController, error) {
	kc := &KindController{
		Name:      "gopf-" + strings.ToLower(gvk.Kind) + nonEmptyDot(gvk.Group),
		GVK:       gvk,
		opts:      opts,
		hasStatus: facts.HasStatus,
		finalizer: opts.Prefix + "/finalizer",
		NewObject: newObject,
		mapping:   facts.Mapping,
	}
	if err := kc.chooseStorage(facts.Schema); err != nil {
		return nil, err
	}
	return kc, nil
}

// chooseStorage sets where the controller keeps its state, from its
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
func (k *KindController) chooseStorage(s state.KindSchema) error {
	opts := k.opts
	k.kopf = &kopfstate.Store{Prefix: opts.KopfPrefix, Kind: k.GVK.Kind, EssenceOf: k.essenceText, Log: logr.Discard()}
	k.place = state.NewStatusPlace(s, k.NewObject, opts.StatusField)
	inStatus, inAnnotations := state.StatusStorage{Field: opts.StatusField}, state.AnnotationStorage{Prefix: opts.Prefix}
	switch {
	case opts.Storage == StorageKopf:
		k.store, k.finalizer = k.kopf, opts.KopfFinalizer
	case opts.Storage == StorageStatus && !k.place.KeepsState():
		return fmt.Errorf("StorageStatus: gopf's state cannot be kept in status.%s of %s: %s; declare the field (an object with x-kubernetes-preserve-unknown-fields) or use StorageAuto",
			opts.StatusField, k.GVK, k.place.State)
	case opts.Storage == StorageStatus, opts.Storage == StorageAuto && k.hasStatus && k.place.KeepsState():
		k.store = kopfstate.Fallback{Storage: inStatus, Other: inAnnotations, Kopf: k.kopf}
	default:
		k.store = kopfstate.Fallback{Storage: inAnnotations, Other: inStatus, Kopf: k.kopf}
	}
	return nil
}

// essenceText is the essence of obj as gopf stores it.
func (k *KindController) essenceText(obj map[string]any) string {
	data, _ := state.Marshal(state.Essence(obj, k.opts.Prefix, k.extra))
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
		k.Level = append(k.Level, r)
	case spec.KindTimer, spec.KindDaemon:
		k.Spawned = append(k.Spawned, r)
	case spec.KindEvent:
		k.Events = append(k.Events, r)
	case spec.KindIndex:
		k.Indexes = append(k.Indexes, r)
	default:
		k.Change = append(k.Change, r)
		k.kopf.Known(r.Options.ID)
	}
	if r.Options.Field != nil {
		k.extra = append(k.extra, r.Options.Field)
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
