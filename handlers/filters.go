package handlers

import (
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gopf-dev/gopf/internal/spec"
)

// presence is the type of Present and Absent (Kopf's kopf.PRESENT and
// kopf.ABSENT); other filter values are given as they are, literals or
// functions (see Labels and Value).
type presence struct{ f spec.Filter }

var (
	// Present matches any value, as long as there is one (an empty label
	// value counts as present).
	Present = presence{spec.Present}
	// Absent matches only a missing value.
	Absent = presence{spec.Absent}
)

// filterSetting is an option that selects objects. Every handler kind that
// is for objects takes it; an object no handler of its kind selects is left
// alone completely: no finalizer, no stored state, no log lines.
type filterSetting struct {
	setting
	forObjects
}

// Labels selects objects by their labels. Each value is a string (the exact
// label value), Present, Absent, or a func(string) bool (or func(any) bool,
// which gets nil for a missing label). All entries must match. A filter
// that needs more than the value (the object's other labels, the operator's
// indexes) is a When. For admission handlers, the entries the API server
// can evaluate go into the webhook's object selector. When every handler of
// a kind selects on such entries, the operator's cache watches the kind
// with the selector they all imply, and objects outside it never reach the
// operator (see gopf.ManagerOptions.CacheUnselected).
// Every registration of objects takes it.
type Labels map[string]any

// Annotations selects objects by their annotations, like Labels.
type Annotations map[string]any

func (l Labels) applyTo(d *draft) { d.Labels = mergeFilters(d, "label", d.Labels, l) }
func (a Annotations) applyTo(d *draft) {
	d.Annotations = mergeFilters(d, "annotation", d.Annotations, a)
}

// Labels and Annotations are options of the same kinds as When.
func (Labels) create()         {}
func (Labels) update()         {}
func (Labels) delete()         {}
func (Labels) resume()         {}
func (Labels) reconcile()      {}
func (Labels) timer()          {}
func (Labels) daemon()         {}
func (Labels) event()          {}
func (Labels) index()          {}
func (Labels) admission()      {}
func (Annotations) create()    {}
func (Annotations) update()    {}
func (Annotations) delete()    {}
func (Annotations) resume()    {}
func (Annotations) reconcile() {}
func (Annotations) timer()     {}
func (Annotations) daemon()    {}
func (Annotations) event()     {}
func (Annotations) index()     {}
func (Annotations) admission() {}

func mergeFilters(d *draft, what string, into map[string]spec.Filter, from map[string]any) map[string]spec.Filter {
	if into == nil {
		into = map[string]spec.Filter{}
	}
	keys := make([]string, 0, len(from))
	for k := range from {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, err := parseFilter(from[k])
		if err != nil {
			d.problem("%s %q: %v", what, k, err)
			continue
		}
		into[k] = f
	}
	return into
}

// When selects objects with a predicate on the whole object, evaluated after
// the other filters: Kopf's when=. The object comes in the handler's Go
// type, and c is what Kopf gives a when= callback as keyword arguments: the
// object's identity (c.Name, c.Namespace, c.UID), c.Labels, c.Annotations,
// c.Log (controller-runtime's logger with the object's namespace and name)
// and c.Indexes, the operator's indexes. The other fields are zero (c.Memo
// is nil): a filter runs before any handler, also for objects that are never
// handled. A filter that admits only the objects some other kind's objects
// name reads an index:
//
//	targets := handlers.OnIndex(reg, "targets", func(s *corev1.Secret, _ *handlers.Cause) map[string]bool {
//		return map[string]bool{s.Annotations["example.com/target"]: true}
//	})
//	handlers.OnUpdate(reg, sync, handlers.When(func(cm *corev1.ConfigMap, c *handlers.Cause) bool {
//		return len(targets.Get(c.Indexes, cm.Name)) > 0
//	}))
//
// Filters read the indexes as they are when the filter runs:
//   - The filters of change, level, timer and daemon handlers run only once
//     every index has seen the initial list of its kind, so at start they
//     see every object the indexes were filled from.
//   - The filters of index functions (and the index functions themselves)
//     run while the indexes fill: at start another index may still lack
//     objects of its kind. The filters of event handlers and admission
//     handlers get no promise either.
//   - A change of an index does not evaluate other objects' filters again
//     (as in Kopf): an object that starts (or stops) matching because an
//     index changed is matched anew at its next event, such as its next
//     change or the informer's resync (the cache's SyncPeriod). It then counts as created if it was never
//     handled, as any object that starts matching.
//
// Every registration of objects takes it (all but OnStartup, OnCleanup, OnProbe and sub-handlers).
func When[T client.Object](fn func(obj T, c *Cause) bool) filterSetting {
	if fn == nil {
		return filterSetting{setting: rejected("When(nil) is not a filter")}
	}
	return filterSetting{setting: set(func(d *draft) {
		d.When = func(obj client.Object, ixs *spec.Indexes) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, filterCause(obj, ixs))
		}
	})}
}

// filterCause is the Cause a When predicate gets for obj.
func filterCause(obj client.Object, ixs *spec.Indexes) *Cause {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	return &Cause{
		Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
		Labels: labels, Annotations: annotations,
		Log:     logf.Log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName()),
		Indexes: (*Indexes)(ixs),
	}
}

// fieldSetting narrows a handler to one field of its objects. Every handler
// kind that is for objects takes it. Admission handlers then see only
// requests whose object (the old one for DELETE) has the field or, with
// Value, whose field's value matches, as in Kopf.
type fieldSetting struct {
	setting
	forObjects
}

// FieldPath is how a field's path is given to Field and OnField: a dotted
// string such as "spec.replicas" or "metadata.labels.app", or the keys one
// by one, as a []string, for keys that contain dots:
// []string{"metadata", "labels", "app.kubernetes.io/name"} (Kopf takes a
// tuple for the same purpose).
type FieldPath interface{ ~string | ~[]string }

// Field narrows a handler to one field, given as a FieldPath. For OnUpdate
// (and OnField) the handler then runs only when that field changed, and
// receives the field's old and new values instead of whole essences.
// Handlers of other kinds then see only the objects that have the field (as
// in Kopf), or, with Value, whose field's value matches.
//
// A dotted string that cannot match anything is a bad registration: a path
// with an empty segment, and one that goes below a label or an annotation
// (such as "metadata.labels.app.kubernetes.io/name", which names the key
// "app" and then keys inside its string value); give such a path as keys.
//
// Every registration of objects takes it (all but OnStartup, OnCleanup, OnProbe and sub-handlers).
func Field[P FieldPath](path P) fieldSetting {
	keys, problem := spec.FieldKeys(path)
	return fieldSetting{setting: set(func(d *draft) {
		d.Field = keys
		if problem != "" {
			d.problem("%s", problem)
		}
	})}
}

// Value requires the field named with Field to match v: a literal, equal
// once both are seen as JSON (3 matches a field holding 3 or 3.0), Present,
// Absent, or a func(any) bool, which gets the field's value as decoded JSON
// or nil when it is missing. It selects objects by the field's current
// value. For change handlers either the old or the new value may
// match.
//
// Every registration of objects takes it (all but OnStartup, OnCleanup, OnProbe and sub-handlers).
func Value(v any) fieldSetting {
	return fieldSetting{setting: fieldFilter("Value", v, func(d *draft, f *spec.Filter) { d.Value = f })}
}

// changeSetting filters the change of a field; only OnUpdate and OnField
// take it.
type changeSetting struct {
	setting
	forUpdate
}

// OldValue requires the field's value before the change to match v.
//
// Only OnUpdate and OnField take it.
func OldValue(v any) changeSetting {
	return changeSetting{setting: fieldFilter("OldValue", v, func(d *draft, f *spec.Filter) { d.Old = f })}
}

// NewValue requires the field's value after the change to match v.
//
// Only OnUpdate and OnField take it.
func NewValue(v any) changeSetting {
	return changeSetting{setting: fieldFilter("NewValue", v, func(d *draft, f *spec.Filter) { d.New = f })}
}

func fieldFilter(name string, v any, assign func(*draft, *spec.Filter)) setting {
	return set(func(d *draft) {
		f, err := parseFilter(v)
		if err != nil {
			d.problem("%s: %v", name, err)
			return
		}
		assign(d, &f)
	})
}

// parseFilter is spec.ParseFilter for a filter value as a user gives it.
func parseFilter(v any) (spec.Filter, error) {
	if f, ok := v.(presence); ok {
		v = f.f
	}
	return spec.ParseFilter(v)
}
