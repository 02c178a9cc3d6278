package assign

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	leasefake "k8s.io/client-go/kubernetes/typed/coordination/v1/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/utils/ptr"

	"github.com/gopf-dev/gopf/internal/shard"
)

// The kinds of the package's tests: ConfigMaps, and Secrets that follow
// the ConfigMap that controls them.
var (
	configMaps = Kind{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespaced: true}
	secrets = Kind{Resource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
		GroupKind: schema.GroupKind{Kind: "Secret"}, Namespaced: true, Controlled: true}
	kinds = []Kind{configMaps, secrets}
)

// controlledBy returns a controller reference to the object of apiVersion,
// kind and name.
func controlledBy(apiVersion, kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}}
}

func TestShardForPlacesObjectsAsTheRingAndChildrenWithTheirController(t *testing.T) {
	r := shard.NewRing("a", "b", "c")
	cm := &metav1.ObjectMeta{Namespace: "ns", Name: "foo"}
	key, _ := shard.ObjectKey(configMaps.GroupKind, cm)
	if s, ok := ShardFor(r, kinds, configMaps.GroupKind, cm); !ok || s != r.ShardFor(key) {
		t.Errorf("a ConfigMap goes to %q, %v; want %q", s, ok, r.ShardFor(key))
	}
	child := &metav1.ObjectMeta{Namespace: "ns", GenerateName: "foo-", OwnerReferences: controlledBy("v1", "ConfigMap", "foo")}
	if s, ok := ShardFor(r, kinds, secrets.GroupKind, child); !ok || s != r.ShardFor(key) {
		t.Errorf("a Secret controlled by the ConfigMap goes to %q, %v; want its controller's %q", s, ok, r.ShardFor(key))
	}
	for what, tc := range map[string]struct {
		ring *shard.Ring
		gk   schema.GroupKind
		obj  *metav1.ObjectMeta
	}{
		"a kind of no ring":          {r, schema.GroupKind{Group: "apps", Kind: "Deployment"}, cm},
		"an empty ring":              {shard.NewRing(), configMaps.GroupKind, cm},
		"a main object unnamed yet":  {r, configMaps.GroupKind, &metav1.ObjectMeta{Namespace: "ns", GenerateName: "foo-"}},
		"a child without controller": {r, secrets.GroupKind, &metav1.ObjectMeta{Namespace: "ns", Name: "s"}},
		"a child of a kind of no ring": {r, secrets.GroupKind,
			&metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: controlledBy("apps/v1", "Deployment", "web")}},
		"a child of a controlled kind": {r, secrets.GroupKind,
			&metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: controlledBy("v1", "Secret", "other")}},
	} {
		if s, ok := ShardFor(tc.ring, kinds, tc.gk, tc.obj); ok || s != "" {
			t.Errorf("%s goes to %q, %v; want no shard", what, s, ok)
		}
	}
}

func TestBadOptionsAreRefusedWithAReason(t *testing.T) {
	good := func() Options {
		return Options{Ring: ring, Namespace: "ns", Kinds: kinds, Metadata: metadatafake.NewSimpleMetadataClient(runtime.NewScheme()),
			Leases: &leasefake.FakeCoordinationV1{}}
	}
	if _, err := New(good()); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for why, change := range map[string]func(*Options){
		"ring name":                 func(o *Options) { o.Ring = "Not_A_Ring" },
		"namespace is empty":        func(o *Options) { o.Namespace = "" },
		"no metadata client":        func(o *Options) { o.Metadata = nil },
		"no Lease client":           func(o *Options) { o.Leases = nil },
		"no main kind":              func(o *Options) { o.Kinds = []Kind{secrets} },
		"needs its resource":        func(o *Options) { o.Kinds = []Kind{{GroupKind: configMaps.GroupKind}} },
		"group \"\" and kind group": func(o *Options) { k := configMaps; k.GroupKind.Group = "apps"; o.Kinds = []Kind{k} },
		"given twice":               func(o *Options) { o.Kinds = []Kind{configMaps, configMaps} },
		"cannot be negative":        func(o *Options) { o.ResyncPeriod = -1 },
	} {
		opts := good()
		change(&opts)
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("options with a bad %s: %v", why, err)
		}
	}
}
