package operator

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/shard"
)

// joinRing makes the operator a shard of its ring, when opts say so: its
// Lease (a shard.Member on mgr) and the cache of its own objects, which
// the kinds' controllers read and watch instead of the manager's cache. It
// returns nil without sharding.
func joinRing(mgr manager.Manager, opts engine.Options) (cache.Cache, error) {
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
	member, err := shard.NewMember(cs.CoordinationV1(), mo)
	if err != nil {
		return nil, fmt.Errorf("gopf: sharding: %w", err)
	}
	if err := mgr.Add(member); err != nil {
		return nil, fmt.Errorf("gopf: adding the shard's Lease: %w", err)
	}
	namespaces, err := scope.CacheNamespaces(opts.Namespaces)
	if err != nil {
		return nil, err
	}
	co := cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultLabelSelector: member.Selector(),
	}
	if !s.KeepManagedFields {
		co.DefaultTransform = cache.TransformStripManagedFields()
	}
	if len(namespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			co.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(mgr.GetConfig(), co)
	if err != nil {
		return nil, fmt.Errorf("gopf: the shard's cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("gopf: adding the shard's cache: %w", err)
	}
	mgr.GetLogger().WithName("gopf").Info("this replica is a shard", "ring", member.Ring(), "shard", member.Shard())
	return c, nil
}
