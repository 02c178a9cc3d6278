package spec

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Handler is one registered handler, as the engines see it. C is the type
// of the context a handler receives (package handlers' *Cause): the engines
// build it (and bind the Extras they cannot set), so that a call costs no
// copy. Admission handlers get an AdmissionCall instead.
type Handler[C any] struct {
	// Kind is what the handler is registered for.
	Kind Kind
	// Options are its resolved settings, with the ID defaulted.
	Options Options
	// Source is where it was registered (file:line), for messages.
	Source string
	// Unstructured is true for handlers of *unstructured.Unstructured.
	Unstructured bool
	// NewObject returns an empty object of the handler's Go type; nil for
	// activities and sub-handlers.
	NewObject func() client.Object
	// DefaultedID is true when the ID was made up for a function literal.
	DefaultedID bool

	// Call runs change handlers, timers, event handlers (no result), index
	// handlers (the result is the object's entries, a map[string]any),
	// activities (obj is nil; only probes have a result) and sub-handlers
	// (obj is nil: they use their parent's).
	Call func(ctx context.Context, obj client.Object, c C) (any, error)
	// Reconcile runs a level handler.
	Reconcile func(ctx context.Context, obj client.Object, c C) (reconcile.Result, error)
	// RunDaemon runs a daemon until it returns.
	RunDaemon func(ctx context.Context, d *DaemonControl[C]) error
	// Review runs an admission handler on one request's call; old is nil
	// where there is none.
	Review func(ctx context.Context, obj, old client.Object, call *AdmissionCall) error
}

// String names the handler for messages: its kind, id and where it was
// registered, as in `create handler "create_fn" (registered at main.go:12)`.
func (h *Handler[C]) String() string {
	return fmt.Sprintf("%s handler %q (registered at %s)", h.Kind, h.Options.ID, h.Source)
}

// Set holds the handlers of one registry and the problems of the bad
// registrations. It is safe for concurrent use.
type Set[C any] struct {
	// BindCause gives a handler's context the Extras of its call; package
	// handlers sets it.
	BindCause func(c C, x *Extras[C])

	mu        sync.Mutex
	handlers  []*Handler[C]
	errs      []error
	operators map[any]*Operator // by manager; see OperatorOf
}

// Add validates h against the handlers before it (with problems found
// already) and keeps it, or records why it is bad. validate runs under the
// set's lock with the handlers added so far.
func (s *Set[C]) Add(h *Handler[C], validate func(earlier []*Handler[C]) []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if problems := validate(s.handlers); len(problems) > 0 {
		s.errs = append(s.errs, fmt.Errorf("bad registration of %s: %s", h, joinProblems(problems)))
		return
	}
	s.handlers = append(s.handlers, h)
}

// Handlers returns the valid handlers of the given kinds (all kinds if none
// are given), in registration order.
func (s *Set[C]) Handlers(kinds ...Kind) []*Handler[C] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Handler[C]
	for _, h := range s.handlers {
		if len(kinds) == 0 || hasKind(kinds, h.Kind) {
			out = append(out, h)
		}
	}
	return out
}

// Err reports every bad registration so far, joined, or nil.
func (s *Set[C]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func hasKind(kinds []Kind, k Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// setOf finds the Set behind a registry; package handlers provides it.
var setOf func(registry any) any

// ExposeSets is called once, by package handlers, with the function that
// finds the Set of one of its registries. It keeps the Set out of the
// registry's public API.
func ExposeSets(fn func(registry any) any) { setOf = fn }

// SetOf returns the Set of a registry (a *handlers.Registry).
func SetOf[C any](registry any) *Set[C] { return setOf(registry).(*Set[C]) }
