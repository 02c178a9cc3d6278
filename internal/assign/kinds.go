package assign

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gopf-dev/gopf/internal/shard"
)

// Kind is a kind whose objects a ring shares among its shards.
type Kind struct {
	// Resource is the kind's resource, which the metadata client lists
	// and patches, in the version to use (any served version will do: the
	// assigner reads and writes only metadata).
	Resource schema.GroupVersionResource
	// GroupKind is the kind, which goes into the keys of its objects
	// (shard.ObjectKey) and which children name in their controller
	// references.
	GroupKind schema.GroupKind
	// Namespaced is true for a namespaced kind, false for a cluster-scoped
	// one.
	Namespaced bool
	// Controlled is true for a kind whose objects follow their controller
	// (shard.ControllerKey), so that a child lands on the shard that works
	// on its owner. Only children whose controller is of a main kind of
	// the ring (Controlled false) are assigned; the others are left alone,
	// as the reference leaves them. A child moves to its owner's new
	// shard at once, without the drain handshake, as the reference moves
	// it: gopf runs no handler on the child itself, so there is nothing
	// for the old shard to stop. False for a main kind, whose objects are
	// keyed by their own name (shard.ObjectKey).
	Controlled bool
}

// String names the kind for logs and errors.
func (k Kind) String() string {
	if k.Controlled {
		return k.Resource.GroupResource().String() + " (controlled)"
	}
	return k.Resource.GroupResource().String()
}

// ShardFor returns the shard of ring (the Ring of the available shards,
// View.Ring) that obj, of kind gk, belongs to, and true; or false if it
// belongs to none: gk is not a kind of kinds, obj has no key (only a
// generateName, or a controlled kind's object without a controller of a
// main kind), or the ring has no shard. It is what an admission webhook
// calls at CREATE to label an object before it is stored, so that it
// costs no write later. It is pure and safe for concurrent use.
func ShardFor(ring *shard.Ring, kinds []Kind, gk schema.GroupKind, obj metav1.Object) (string, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.GroupKind == gk })
	if i < 0 {
		return "", false
	}
	key, ok, _ := keyOf(kinds, kinds[i], obj)
	if !ok {
		return "", false
	}
	s := ring.ShardFor(key)
	return s, s != ""
}

// keyOf returns obj's key on the ring, and false if obj is not to be
// assigned: a main kind's object with only a generateName, a controlled
// kind's object without a controller, or with a controller that is not of
// a main kind of kinds. The error says why, for the log.
func keyOf(kinds []Kind, k Kind, obj metav1.Object) (string, bool, error) {
	if !k.Controlled {
		key, err := shard.ObjectKey(k.GroupKind, obj)
		return key, err == nil, err
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return "", false, fmt.Errorf("%s %s/%s: %w", k, obj.GetNamespace(), obj.GetName(), shard.ErrNoController)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", false, fmt.Errorf("%s %s/%s: its controller's apiVersion: %w", k, obj.GetNamespace(), obj.GetName(), err)
	}
	owner := gv.WithKind(ref.Kind).GroupKind()
	if !slices.ContainsFunc(kinds, func(m Kind) bool { return !m.Controlled && m.GroupKind == owner }) {
		return "", false, fmt.Errorf("%s %s/%s: its controller is a %s, not a main kind of the ring", k, obj.GetNamespace(), obj.GetName(), owner)
	}
	key, err := shard.ControllerKey(obj)
	return key, err == nil, err
}
