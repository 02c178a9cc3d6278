package operator

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheOptions are the options of a cache gopf builds, the manager's or a
// shard's: limited to namespaces (every namespace when there are none;
// see scope.CacheNamespaces), and with metadata.managedFields dropped as
// objects enter it unless keepManagedFields. The caller adds the rest
// (a shard's label selector, the kinds narrowed to their handlers' labels).
func CacheOptions(namespaces []string, keepManagedFields bool) cache.Options {
	var co cache.Options
	if !keepManagedFields {
		co.DefaultTransform = cache.TransformStripManagedFields()
	}
	if len(namespaces) > 0 {
		co.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			co.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return co
}
