package operator

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/spec"
)

// A cache gopf builds watches a kind with a label selector, server-side,
// when every handler of the kind selects on labels the API server can
// evaluate (a value, Present, Absent): objects that no handler can select
// then never reach the operator, and cost it neither memory nor work. The
// selector is what every handler's label filters imply (see
// commonSelector), so it never hides an object that some handler selects.
//
// A kind is cached whole when any handler of it takes every object (no
// label filter, or only function filters), when it has event handlers
// (which see an object that leaves the selector as deleted), and when a
// level handler owns or watches it (their children need not carry the
// labels). Handlers that choose their kinds among those served
// (ForCategory, ForKinds) leave kinds with handlers of their own to those,
// so they do not count; the kinds they choose are cached whole.
//
// An object whose labels change so that it leaves the selector vanishes
// from the cache as if deleted; the engine reads it from the API server
// then, if it held gopf's finalizer, and releases it as when in-memory
// filters stop matching (see engine.Narrowed). One that left while the
// operator was not running is found at start by one metadata list of the
// kind (engine's FindLeft, which start adds for each narrowed kind).

// narrowKind is a kind a cache can narrow: an object of its type (for
// cache.Options.ByObject) and the selector.
type narrowKind struct {
	object   client.Object
	selector labels.Selector
}

// narrowKinds returns the kinds of reg's handlers that a cache can narrow,
// with their selectors. Kinds that do not resolve (not served yet) are
// left whole.
func narrowKinds(reg *handlers.Registry, scheme *runtime.Scheme, mapper meta.RESTMapper) map[schema.GroupVersionKind]narrowKind {
	byKind := map[schema.GroupVersionKind][]*contract.Handler{}
	proto := map[schema.GroupVersionKind]*contract.Handler{}
	whole := map[schema.GroupKind]bool{}
	keepWhole := func(objs ...client.Object) {
		for _, obj := range objs {
			if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
				whole[gvk.GroupKind()] = true
			}
		}
	}
	for _, r := range contract.SetOf(reg).Handlers(contract.ObjectKinds...) {
		keepWhole(r.Options.Owned...)
		for _, w := range r.Options.Watched {
			keepWhole(w.Object)
		}
		if r.Options.Kinds != nil {
			continue
		}
		gvk, _, err := spec.ResolveKind(r, scheme, mapper)
		if err != nil {
			continue
		}
		if r.Kind == spec.KindEvent {
			whole[gvk.GroupKind()] = true
		}
		if proto[gvk] == nil {
			proto[gvk] = r
		}
		byKind[gvk] = append(byKind[gvk], r)
	}
	out := map[schema.GroupVersionKind]narrowKind{}
	for gvk, hs := range byKind {
		if whole[gvk.GroupKind()] {
			continue
		}
		filters := make([]map[string]spec.Filter, 0, len(hs))
		for _, r := range hs {
			filters = append(filters, r.Options.Labels)
		}
		if sel := commonSelector(filters); sel != nil {
			out[gvk] = narrowKind{object: engine.ObjectMaker(gvk, proto[gvk])(), selector: sel}
		}
	}
	return out
}

// commonSelector returns the label selector that each of the handlers'
// label filters implies (filters: one map per handler), or nil when they
// imply nothing in common that the API server can evaluate. Per label key
// that every handler requires, the requirements join: values ("in")
// gather, Present takes in values, Absent joins only Absent; a key some
// handler does not require, or requires in ways that do not join, drops
// out. Function filters require nothing the API server can check.
func commonSelector(filters []map[string]spec.Filter) labels.Selector {
	var common map[string]metav1.LabelSelectorRequirement
	for i, f := range filters {
		sel := spec.ObjectSelector(f)
		if sel == nil {
			return nil
		}
		own := make(map[string]metav1.LabelSelectorRequirement, len(sel.MatchExpressions))
		for _, req := range sel.MatchExpressions {
			own[req.Key] = req
		}
		if i == 0 {
			common = own
			continue
		}
		for key, c := range common {
			joined, ok := joinRequirements(c, own[key])
			if _, required := own[key]; !required || !ok {
				delete(common, key)
				continue
			}
			common[key] = joined
		}
		if len(common) == 0 {
			return nil
		}
	}
	if len(common) == 0 {
		return nil
	}
	ls := &metav1.LabelSelector{}
	for _, req := range common {
		ls.MatchExpressions = append(ls.MatchExpressions, req)
	}
	sort.Slice(ls.MatchExpressions, func(i, j int) bool { return ls.MatchExpressions[i].Key < ls.MatchExpressions[j].Key })
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil // spec.ObjectSelector keeps only valid keys and values
	}
	return sel
}

// joinRequirements returns the weakest requirement on one key that both a
// and b imply, if the API server can evaluate it.
func joinRequirements(a, b metav1.LabelSelectorRequirement) (metav1.LabelSelectorRequirement, bool) {
	absent := metav1.LabelSelectorOpDoesNotExist
	switch {
	case a.Operator == absent && b.Operator == absent:
		return a, true
	case a.Operator == absent || b.Operator == absent:
		return a, false
	case a.Operator == metav1.LabelSelectorOpExists || b.Operator == metav1.LabelSelectorOpExists:
		return metav1.LabelSelectorRequirement{Key: a.Key, Operator: metav1.LabelSelectorOpExists}, true
	}
	values := slices.Concat(a.Values, b.Values)
	slices.Sort(values)
	return metav1.LabelSelectorRequirement{Key: a.Key, Operator: metav1.LabelSelectorOpIn, Values: slices.Compact(values)}, true
}

// narrow adds to co, for each kind of reg that a cache can narrow, its
// selector (joined with co.DefaultLabelSelector, a shard's, which a
// kind's own selector would otherwise replace), and returns the kinds'
// selectors as the handlers imply them.
func narrow(co *cache.Options, reg *handlers.Registry) map[schema.GroupVersionKind]labels.Selector {
	kinds := narrowKinds(reg, co.Scheme, co.Mapper)
	if len(kinds) == 0 {
		return nil
	}
	var shardReqs labels.Requirements
	if co.DefaultLabelSelector != nil {
		shardReqs, _ = co.DefaultLabelSelector.Requirements()
	}
	by := make(map[schema.GroupVersionKind]labels.Selector, len(kinds))
	co.ByObject = make(map[client.Object]cache.ByObject, len(kinds))
	for gvk, k := range kinds {
		co.ByObject[k.object] = cache.ByObject{Label: k.selector.Add(shardReqs...)}
		by[gvk] = k.selector
	}
	return by
}

// narrowedCache is a cache that watches some kinds with a label selector
// and says which (engine.Narrowed).
type narrowedCache struct {
	cache.Cache
	by  map[schema.GroupVersionKind]labels.Selector
	own labels.Selector // the shard's selector, which every kind's adds; nil without sharding
}

// NarrowedBy implements engine.Narrowed.
func (c *narrowedCache) NarrowedBy(gvk schema.GroupVersionKind) labels.Selector { return c.by[gvk] }

// Own implements engine.Narrowed.
func (c *narrowedCache) Own() labels.Selector { return c.own }

var _ engine.Narrowed = (*narrowedCache)(nil)

// NarrowingCache returns the function a manager builds its cache with
// (manager.Options.NewCache) so that the cache watches the kinds of reg's
// handlers narrowed to their handlers' labels, as far as it can.
func NarrowingCache(reg *handlers.Registry) cache.NewCacheFunc {
	return func(cfg *rest.Config, co cache.Options) (cache.Cache, error) {
		by := narrow(&co, reg)
		c, err := cache.New(cfg, co)
		if err != nil {
			return nil, err
		}
		if len(by) == 0 {
			return c, nil
		}
		return &narrowedCache{Cache: c, by: by}, nil
	}
}
