// Package contract instantiates the engine contract (internal/spec) with
// package handlers' types, for the engines (reconcile and webhook): the
// handlers of a registry, the set they are in and the extras of a call.
package contract

import (
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

type (
	// Handler is one registered handler.
	Handler = spec.Handler[*handlers.Cause]
	// Set holds the handlers of one registry.
	Set = spec.Set[*handlers.Cause]
	// Extras are the engine's side of one handler call.
	Extras = spec.Extras[*handlers.Cause]
)

// SetOf returns the handlers of a registry.
func SetOf(reg *handlers.Registry) *Set {
	return spec.SetOf[*handlers.Cause](reg)
}

// HoldsObjects reports whether a registration keeps gopf's finalizer on the
// objects it selects: a delete handler that is not optional, a timer or a
// daemon (until it finishes for good).
func HoldsObjects(r *Handler) bool {
	return r.Kind == spec.KindDelete && !r.Options.Optional || r.Kind == spec.KindTimer || r.Kind == spec.KindDaemon
}

// ObjectKinds are the handler kinds the reconcile engine runs for objects
// (the webhook package runs the admission handlers).
var ObjectKinds = []spec.Kind{
	spec.KindCreate, spec.KindUpdate, spec.KindField, spec.KindDelete, spec.KindResume,
	spec.KindReconcile, spec.KindTimer, spec.KindDaemon, spec.KindEvent, spec.KindIndex,
}
