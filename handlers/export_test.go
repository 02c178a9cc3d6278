package handlers

import (
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/gopf-dev/gopf/internal/spec"
)

// HandlersOf returns the valid handlers of r of the given kinds (all kinds
// if none are given), in registration order, as the engines see them.
func HandlersOf(r *Registry, kinds ...spec.Kind) []*handler { return r.set.Handlers(kinds...) }

// MatchFilter applies f, a filter value as Labels and Value take it, as the
// engines do; a value that is no filter matches nothing.
func MatchFilter(f any, value any, present bool) bool {
	parsed, err := parseFilter(f)
	return err == nil && parsed.Match(value, present)
}

// Extras are the engine's side of a call, as the tests see it.
type Extras = extras

// CauseWith returns a Cause for handlerID bound to x, as the engine makes it.
func CauseWith(r *Registry, handlerID string, x *Extras) *Cause {
	c := &Cause{HandlerID: handlerID}
	r.engineSet().BindCause(c, x)
	return c
}

// CallFor returns the webhook's call of an admission handler for a request
// of op, as the webhook makes it.
func CallFor(op admissionv1.Operation) *spec.AdmissionCall {
	return &spec.AdmissionCall{Raw: &admissionv1.AdmissionRequest{Operation: op}}
}
