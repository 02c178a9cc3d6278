package gopf

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
)

// Registry collects handler registrations; see handlers.Registry.
type Registry = handlers.Registry

// Cause is what a handler receives besides the object; see handlers.Cause.
type Cause = handlers.Cause

// Reason says why a change handler is called; see handlers.Reason.
type Reason = handlers.Reason

// Option configures a handler registration; see handlers.Option.
type Option = handlers.Option

// Options are all settings of a handler registration; see handlers.Options.
type Options = handlers.Options

// HandlerFunc is a change handler for objects of type T; see handlers.HandlerFunc.
type HandlerFunc[T client.Object] = handlers.HandlerFunc[T]

// The reasons a change handler is called for; see handlers.Reason.
const (
	ReasonCreate = handlers.ReasonCreate
	ReasonUpdate = handlers.ReasonUpdate
	ReasonDelete = handlers.ReasonDelete
	ReasonResume = handlers.ReasonResume
)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return handlers.NewRegistry() }

// OnCreate registers fn to run once for each new object; see handlers.OnCreate.
func OnCreate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	handlers.OnCreate(r, fn, opts...)
}

// ID sets a handler's id; see handlers.ID.
func ID(id string) Option { return handlers.ID(id) }

// WithParam sets the value handed to the handler as Cause.Param.
func WithParam(param any) Option { return handlers.WithParam(param) }

// ForKind names the kind of an unstructured handler; see handlers.ForKind.
func ForKind(group, version, kind string) Option { return handlers.ForKind(group, version, kind) }

// ForResource names the kind of an unstructured handler by resource name;
// see handlers.ForResource.
func ForResource(name string) Option { return handlers.ForResource(name) }
