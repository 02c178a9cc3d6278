package spec

import (
	"context"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Operator is what the engines of one registry on one manager share, so
// that admission handlers see what the reconcile engine keeps: the
// operator's memo (which the startup handlers fill and which seeds every
// object's memo), the indexes, and the memos of the objects the engine has
// seen. It is safe for concurrent use.
type Operator struct {
	// Memo is the operator's memo.
	Memo *Memo
	// Indexes are the operator's indexes.
	Indexes *Indexes

	mu         sync.RWMutex
	memos      map[schema.GroupVersionKind]func(key types.NamespacedName, uid types.UID) *Memo
	finalizers map[schema.GroupVersionKind]CreateFinalizer
	shard      *CreateShard
}

// CreateFinalizer is the reconcile engine's answer, for one kind, to
// whether a new object needs gopf's finalizer. The webhook decodes the
// object once, into New, and asks Decide.
type CreateFinalizer struct {
	// New returns an empty object of the kind in the engine's Go type.
	New func() client.Object
	// Decide returns the finalizer to add to obj, a new object decoded
	// into New with the namespace of its create request, or "" for none.
	Decide func(obj client.Object) string
}

// AddCreateFinalizer lets the admission webhook ask the engine, through
// CreateFinalizers, which new objects of a kind get gopf's finalizer.
func (o *Operator) AddCreateFinalizer(gvk schema.GroupVersionKind, f CreateFinalizer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finalizers == nil {
		o.finalizers = map[schema.GroupVersionKind]CreateFinalizer{}
	}
	o.finalizers[gvk] = f
}

// CreateFinalizers returns the kinds whose new objects may need gopf's
// finalizer, and how to tell which do.
func (o *Operator) CreateFinalizers() map[schema.GroupVersionKind]CreateFinalizer {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return maps.Clone(o.finalizers)
}

// CreateShard is how the reconcile engine's sharding tells gopf's
// admission webhook which shard a new object of the ring belongs to, so
// that it is stored with its shard's label rather than labelled by the
// assigner with a write of its own.
type CreateShard struct {
	// Label is the ring's shard label.
	Label string
	// Kinds are the kinds of the ring: those the engine handles and those
	// whose objects follow their controller.
	Kinds []schema.GroupVersionKind
	// ShardFor returns the shard that obj, a new object of kind gk with
	// the namespace of its create request, belongs to now, or "" when it
	// is not to be labelled at admission (no shard is available, it has
	// only a generateName, it is a child without a controller of the ring,
	// or its namespace is not the operator's). Safe for concurrent use.
	ShardFor func(gk schema.GroupKind, obj metav1.Object) string
	// Watch keeps what ShardFor knows of the ring's shards up to date
	// until ctx is done, and returns once it stopped. The webhook server
	// runs it while it serves; before it has read the shards once,
	// ShardFor returns "".
	Watch func(ctx context.Context) error
}

// SetCreateShard lets the admission webhook label new objects with their
// shard (see CreateShard).
func (o *Operator) SetCreateShard(s *CreateShard) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shard = s
}

// CreateShard returns how to label new objects with their shard, or nil
// when the operator is not sharded or another assigner labels them.
func (o *Operator) CreateShard() *CreateShard {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.shard
}

// AddObjectMemos lets ObjectMemo find the memos of a kind's objects with
// find, which returns nil for an object the engine has not seen.
func (o *Operator) AddObjectMemos(gvk schema.GroupVersionKind, find func(key types.NamespacedName, uid types.UID) *Memo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.memos[gvk] = find
}

// ObjectMemo returns the memo of the object, or nil if the reconcile
// engine does not know it (or does not handle its kind).
func (o *Operator) ObjectMemo(gvk schema.GroupVersionKind, key types.NamespacedName, uid types.UID) *Memo {
	o.mu.RLock()
	find := o.memos[gvk]
	o.mu.RUnlock()
	if find == nil {
		return nil
	}
	return find(key, uid)
}

// OperatorOf returns the Operator of the set on one manager (owner, a
// comparable value such as the manager itself), new on first use: both
// engines call it during setup and get the same one.
func (s *Set[C]) OperatorOf(owner any) *Operator {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op, ok := s.operators[owner]; ok {
		return op
	}
	if s.operators == nil {
		s.operators = map[any]*Operator{}
	}
	op := &Operator{Memo: &Memo{}, Indexes: NewIndexes(), memos: map[schema.GroupVersionKind]func(types.NamespacedName, types.UID) *Memo{}}
	s.operators[owner] = op
	return op
}

// DropOperator forgets the Operator of the set on owner, once the manager
// has stopped.
func (s *Set[C]) DropOperator(owner any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.operators, owner)
}
