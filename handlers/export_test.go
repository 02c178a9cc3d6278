package handlers

import "github.com/gopf-dev/gopf/internal/spec"

// HandlersOf returns the valid handlers of r of the given kinds (all kinds
// if none are given), in registration order, as the engines see them.
func HandlersOf(r *Registry, kinds ...spec.Kind) []*spec.Handler { return r.set.Handlers(kinds...) }
