package decide

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Selects reports whether a handler's metadata filters, field value filter
// and When predicate accept obj (given in the handler's Go type). The old
// and new value filters are checked per cause, where both values are known.
//
// raw is obj as a JSON-like map, or nil: then it is converted only if a
// value filter needs it. ixs are the operator's indexes, which filters may
// read as they are now (handlers.When says when they are full).
func Selects(r *contract.Handler, obj client.Object, raw map[string]any, ixs *spec.Indexes) bool {
	if !spec.MatchMetadata(r.Options.Labels, obj.GetLabels()) || !spec.MatchMetadata(r.Options.Annotations, obj.GetAnnotations()) {
		return false
	}
	if o := r.Options; o.Field != nil && (o.Value != nil || !changeOfField(r.Kind)) {
		// Like Kopf's pre-match, a field's value filter selects objects by
		// their current value; for change handlers the old value may match
		// too, which the cause's own check covers. Without a value filter,
		// a handler narrowed to a field selects the objects that have it,
		// as in Kopf; update and field handlers are the exception: the
		// field's change is what they are for, its removal included.
		if raw == nil {
			var err error
			if raw, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
				return false
			}
		}
		v, ok := state.Lookup(raw, o.Field)
		if o.Value == nil && !ok || o.Value != nil && !o.Value.Match(v, ok) {
			return false
		}
	}
	return r.Options.When == nil || r.Options.When(obj, ixs)
}

// fieldValues returns a field's value in the old and new essence (nil and
// false where absent).
func fieldValues(path []string, old, new any) (ov any, oldOK bool, nv any, newOK bool) {
	if old != nil {
		ov, oldOK = state.Lookup(old, path)
	}
	nv, newOK = state.Lookup(new, path)
	return ov, oldOK, nv, newOK
}

// matchField applies the Value, OldValue and NewValue filters of a handler
// narrowed to a field. Value may match either side.
func matchField(o spec.Options, ov any, oldOK bool, nv any, newOK bool) bool {
	if o.Value != nil && !o.Value.Match(ov, oldOK) && !o.Value.Match(nv, newOK) {
		return false
	}
	if o.Old != nil && !o.Old.Match(ov, oldOK) {
		return false
	}
	return o.New == nil || o.New.Match(nv, newOK)
}

// changeOfField reports whether handlers of the kind narrowed to a field
// run for changes of that field (update and field handlers).
func changeOfField(k spec.Kind) bool { return k == spec.KindUpdate || k == spec.KindField }
