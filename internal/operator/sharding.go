package operator

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/assign"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/metrics"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/spec"
)

// joinRing makes the operator a shard of its ring, when opts say so: its
// Lease (a shard.Member on mgr) and the cache of its own objects, which
// the kinds' controllers read and watch instead of the manager's cache. The
// shard's cache also narrows the kinds of reg's handlers to their label
// filters (see narrowKinds): only gopf reads it. The operator's gate stays
// closed until the member holds its Lease, and the member's graceful stop
// closes it and waits for the work in flight before it releases the Lease
// (see guardWork). It returns nil without sharding.
func joinRing(mgr manager.Manager, reg *handlers.Registry, sh *engine.Shared, opts engine.Options) (cache.Cache, error) {
	s := opts.Sharding
	if s == nil {
		return nil, nil
	}
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("gopf: a client for the shard's Lease: %w", err)
	}
	mo := s.Member()
	mo.Log = mgr.GetLogger().WithName("gopf").WithName("shard")
	guardWork(&mo, sh)
	member, err := shard.NewMember(cs.CoordinationV1(), mo)
	if err != nil {
		return nil, fmt.Errorf("gopf: sharding: %w", err)
	}
	if err := mgr.Add(member); err != nil {
		return nil, fmt.Errorf("gopf: adding the shard's Lease: %w", err)
	}
	if err := mgr.AddReadyzCheck("gopf-shard", member.Ready); err != nil {
		return nil, fmt.Errorf("gopf: the shard's readiness check: %w", err)
	}
	namespaces, err := scope.CacheNamespaces(opts.Namespaces)
	if err != nil {
		return nil, err
	}
	co := CacheOptions(namespaces, s.KeepManagedFields)
	co.HTTPClient, co.Scheme, co.Mapper = mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper()
	co.DefaultLabelSelector = member.Selector()
	narrowed := narrow(&co, reg)
	c, err := cache.New(mgr.GetConfig(), co)
	if err != nil {
		return nil, fmt.Errorf("gopf: the shard's cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("gopf: adding the shard's cache: %w", err)
	}
	mgr.GetLogger().WithName("gopf").Info("this replica is a shard", "ring", member.Ring(), "shard", member.Shard())
	metrics.ShardInfo.WithLabelValues(member.Ring(), member.Shard()).Set(1)
	if len(narrowed) > 0 {
		return &narrowedCache{Cache: c, by: narrowed, own: co.DefaultLabelSelector}, nil
	}
	return c, nil
}

// guardWork ties the operator's work to the shard's Lease: nothing is
// handled before the member holds it (another process may hold the shard
// under the same name), and on a graceful stop nothing new starts while
// the handler calls, outcome writes and daemons in flight finish, before
// the Lease is released. The member is stopped before the controllers
// (it runs with the manager's other runnables, which stop first), so
// their workers are still there to finish.
func guardWork(mo *shard.MemberOptions, sh *engine.Shared) {
	sh.Gate.Unheld()
	mo.OnJoin = sh.Gate.Held
	mo.OnHeldElsewhere = sh.Gate.HeldElsewhere
	mo.Drain = func(timeout time.Duration) bool {
		sh.Gate.Close()
		return sh.Idle(timeout)
	}
}

// assignPageSize is how many objects' metadata each of the assigner's
// list requests returns. One unpaginated list (resourceVersion=0) is the
// cheapest read for the API server, but the replica that assigns then
// holds every object's metadata at once, managed fields included: 16 MiB
// at 10,000 objects, more than the rest of its heap (make bench-sharded's
// profiles). Pages bound that to a few hundred objects.
const assignPageSize = 500

// addAssigner elects one replica of the ring to assign the objects of the
// kinds (and of the kinds their level handlers own, which follow their
// owners) to shards, unless a sharder outside the operator does, and lets
// gopf's admission webhook label new objects of those kinds (see
// offerShardAtCreate).
func addAssigner(mgr manager.Manager, op *spec.Operator, kinds []*engine.KindController, opts engine.Options) error {
	s := opts.Sharding
	if s == nil || s.ExternalAssigner || len(kinds) == 0 {
		return nil
	}
	ak, err := assignedKinds(mgr, kinds)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("gopf: a metadata client for the assigner: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("gopf: a client for the assigner's Leases: %w", err)
	}
	namespaces, err := scope.CacheNamespaces(opts.Namespaces)
	if err != nil {
		return err
	}
	a, err := assign.New(assign.Options{
		Ring: s.Ring, Namespace: s.Namespace, Kinds: ak, Namespaces: namespaces, Metadata: md, Leases: cs.CoordinationV1(),
		Shard: s.Shard, PageSize: assignPageSize, Log: mgr.GetLogger().WithName("gopf").WithName("assigner"),
	})
	if err != nil {
		return fmt.Errorf("gopf: the shard assigner: %w", err)
	}
	if err := offerShardAtCreate(op, cs.CoordinationV1(), s, ak, namespaces); err != nil {
		return fmt.Errorf("gopf: assigning shards at admission: %w", err)
	}
	return mgr.Add(a)
}

// assignedKinds returns the kinds the assigner assigns to shards: those of
// the operator's controllers, and the kinds their level handlers own, as
// Controlled (their objects follow their owners), each once.
func assignedKinds(mgr manager.Manager, kinds []*engine.KindController) ([]assign.Kind, error) {
	var ak []assign.Kind
	seen := map[schema.GroupKind]bool{}
	add := func(gvk schema.GroupVersionKind, controlled bool) error {
		if seen[gvk.GroupKind()] {
			return nil
		}
		seen[gvk.GroupKind()] = true
		m, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("gopf: assigning %s to shards: %w", gvk, err)
		}
		namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
		ak = append(ak, assign.Kind{Resource: m.Resource, GroupKind: gvk.GroupKind(), Namespaced: namespaced, Controlled: controlled})
		return nil
	}
	for _, kc := range kinds {
		if err := add(kc.GVK, false); err != nil {
			return nil, err
		}
	}
	for _, kc := range kinds {
		for _, r := range kc.Level {
			for _, owned := range r.Options.Owned {
				gvk, err := apiutil.GVKForObject(owned, mgr.GetScheme())
				if err != nil {
					return nil, fmt.Errorf("gopf: assigning the children of %s to shards: %w", kc.GVK, err)
				}
				if err := add(gvk, true); err != nil {
					return nil, err
				}
			}
		}
	}
	return ak, nil
}
