package engine

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/spec"
)

// selected returns the registrations whose filters accept obj; raw is obj
// as a JSON-like map. When all do, it returns regs itself: callers only
// read the result.
func (k *KindController) selected(regs []*contract.Handler, obj client.Object, raw map[string]any) []*contract.Handler {
	for i, r := range regs {
		if k.Selects(r, obj, raw) {
			continue
		}
		out := append(make([]*contract.Handler, 0, len(regs)-1), regs[:i]...)
		for _, r := range regs[i+1:] {
			if k.Selects(r, obj, raw) {
				out = append(out, r)
			}
		}
		return out
	}
	return regs
}

// Selects applies a handler's filters to obj in the handler's Go type. raw
// is obj as a JSON-like map, or nil to have it converted when needed.
func (k *KindController) Selects(r *contract.Handler, obj client.Object, raw map[string]any) bool {
	var indexes *spec.Indexes
	if k.Shared != nil { // the planner has no indexes: filters see none
		indexes = k.Shared.Indexes
	}
	if r.Options.When == nil {
		return decide.Selects(r, obj, raw, indexes)
	}
	typed, err := k.ObjectFor(r, obj)
	return err == nil && decide.Selects(r, typed, raw, indexes)
}

// holds reports whether obj carries gopf's finalizer or that of the Kopf
// operator gopf takes over from, which gopf answers for as for its own.
func (k *KindController) holds(obj client.Object) bool { return k.finalizers().Holds(obj) }
