package spec

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is the kind of a handler: what it is registered for and how the
// engine runs it.
type Kind int

// The handler kinds. The zero Kind is not a kind.
const (
	// KindCreate, KindUpdate, KindField, KindDelete and KindResume are change handlers, run by
	// the reconciler for a cause.
	KindCreate Kind = iota + 1
	KindUpdate
	KindField
	KindDelete
	KindResume
	// KindReconcile is a level handler, run on every reconcile.
	KindReconcile
	// KindTimer and KindDaemon are spawned per object.
	KindTimer
	KindDaemon
	// KindEvent handlers see raw watch events; KindIndex handlers fill an index.
	KindEvent
	KindIndex
	// KindStartup, KindCleanup and KindProbe are operator-level activities.
	KindStartup
	KindCleanup
	KindProbe
	// KindValidate and KindMutate are admission handlers.
	KindValidate
	KindMutate
	// KindSub is a sub-handler, registered during a change handler's call.
	KindSub
)

var kindNames = [...]string{
	KindCreate: "create", KindUpdate: "update", KindField: "field", KindDelete: "delete", KindResume: "resume",
	KindReconcile: "reconcile", KindTimer: "timer", KindDaemon: "daemon", KindEvent: "event", KindIndex: "index",
	KindStartup: "startup", KindCleanup: "cleanup", KindProbe: "probe", KindValidate: "validate", KindMutate: "mutate", KindSub: "sub",
}

// String is the kind's name as messages, metrics and default ids use it:
// "create", "field", "timer", ...
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Reason is the cause a change handler of this kind is called for: "create",
// "update" (field handlers too), "delete" or "resume"; "" for other kinds.
func (k Kind) Reason() string {
	switch k {
	case KindCreate, KindDelete, KindResume, KindUpdate:
		return k.String()
	case KindField:
		return KindUpdate.String()
	}
	return ""
}

// Admission reports whether the kind is an admission handler.
func (k Kind) Admission() bool { return k == KindValidate || k == KindMutate }

// Resource reports whether handlers of the kind are for objects of a kind
// (everything but activities and sub-handlers, which inherit their parent's).
func (k Kind) Resource() bool { return k >= KindCreate && k <= KindIndex || k.Admission() }

// KindSelector chooses the kinds of an unstructured handler among those the
// API server serves, as Kopf's category= and callable selectors do. Exactly
// one of Category and Match is set.
type KindSelector struct {
	// Category selects the kinds listed in that category by discovery
	// (a CRD's spec.names.categories; "all" for many built-in kinds).
	Category string
	// Match selects the kinds for which it returns true.
	Match func(schema.GroupVersionKind) bool
}

// Selects reports whether s chooses a served kind gvk whose discovery
// categories are categories.
func (s *KindSelector) Selects(gvk schema.GroupVersionKind, categories []string) bool {
	if s.Match != nil {
		return s.Match(gvk)
	}
	return slices.Contains(categories, s.Category)
}

// String describes the selector in messages.
func (s *KindSelector) String() string {
	if s.Match != nil {
		return "kinds chosen by a function"
	}
	return "kinds of category " + strconv.Quote(s.Category)
}
