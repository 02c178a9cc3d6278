package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reason says why a change handler is being called.
type Reason string

// The reasons a change handler can be called for, in the words Kopf uses.
const (
	// ReasonCreate: the object has no stored last-handled state.
	ReasonCreate Reason = "create"
	// ReasonUpdate: the object's essence differs from the stored one.
	ReasonUpdate Reason = "update"
	// ReasonDelete: the object is being deleted and gopf's finalizer holds it.
	ReasonDelete Reason = "delete"
	// ReasonResume: first sight in this process of an already-handled object.
	ReasonResume Reason = "resume"
)

// Cause is what a handler receives besides the object itself: why it is
// called, for which object, and the handler's own bookkeeping. A Cause is
// valid for the duration of one call only.
type Cause struct {
	// Reason is why the handler is called. OnReconcile handlers see the
	// cause handled in the same reconcile, or "" when there was none.
	Reason Reason
	// HandlerID is the id of the running handler; results go to status.<HandlerID>.
	HandlerID string

	// Name, Namespace and UID identify the object. Namespace is empty for
	// cluster-scoped objects.
	Name      string
	Namespace string
	UID       types.UID
	// Labels and Annotations are the object's, never nil.
	Labels      map[string]string
	Annotations map[string]string

	// Old and New are the essences before and after the change (for
	// handlers narrowed to a field: that field's values), as decoded JSON.
	// Old is nil on create, New is nil on delete.
	Old, New any
	// Diff lists the changes from Old to New. Empty on create, resume and
	// delete.
	Diff Diff

	// Patch collects changes to the object, applied after the handlers of
	// this reconcile return.
	Patch *Patch
	// Client is the manager's client: reads come from its cache, writes go
	// to the API server. Use it for other objects (children, secondary
	// resources); changes to the handled object belong in Patch.
	Client client.Client
	// Memo is the object's in-memory scratchpad, shared by its handlers;
	// for operator-level handlers (OnStartup, OnCleanup, OnProbe), the
	// operator's.
	Memo *Memo

	// Retry counts earlier attempts of this handler for this cause: 0 on the
	// first call.
	Retry int
	// Started is when the first attempt of this handler for this cause began.
	Started time.Time

	// Runtime is the time since Started.
	Runtime time.Duration

	// Log carries the object's identity and the handler id.
	Log logr.Logger

	// Param is the value given with the WithParam option at registration.
	Param any

	// Event is the watch event an OnEvent handler is called for; "" for
	// other handlers.
	Event EventType

	// Indexes are the operator's indexes, by name; see OnIndex.
	Indexes *Indexes

	// EventSink posts Kubernetes Events about the object. gopf sets it; use
	// Post, Info, Warn and Exception.
	EventSink func(eventType, reason, message string)

	sub *subRegistry
}

// Register adds a sub-handler for this call: a function run after the
// calling handler returns, with its own id (<parent-id>/<id>), its own
// progress and retries, and its result in status.<parent-id>/<id>. The
// parent is called again on later reconciles while any sub-handler is
// unfinished, so it must register the same sub-handlers every time and do
// nothing else with side effects. Register is for change handlers only.
func (c *Cause) Register(id string, fn func(ctx context.Context, c *Cause) (any, error), opts ...Option) {
	if c.sub == nil {
		c.sub = &subRegistry{}
	}
	o := Options{ID: id}
	for _, opt := range opts {
		if opt != nil {
			opt.ApplyToHandler(&o)
		}
	}
	o.ID = c.HandlerID + "/" + id
	c.sub.add(SubHandler{Options: o, Fn: fn, nilFn: fn == nil, badID: id == ""})
}

// SubHandlers returns the sub-handlers registered during this call, and an
// error for any that cannot be run (empty id, nil function, duplicate id).
func (c *Cause) SubHandlers() ([]SubHandler, error) {
	if c.sub == nil {
		return nil, nil
	}
	return c.sub.list, c.sub.err()
}

// SubHandler is a handler registered with Cause.Register.
type SubHandler struct {
	// Options are the sub-handler's options; ID is the full <parent>/<id>.
	Options Options
	// Fn is the sub-handler.
	Fn func(ctx context.Context, c *Cause) (any, error)

	nilFn, badID bool
}

type subRegistry struct {
	list []SubHandler
}

func (s *subRegistry) add(h SubHandler) { s.list = append(s.list, h) }

func (s *subRegistry) err() error {
	seen := map[string]bool{}
	var problems []string
	for _, h := range s.list {
		switch {
		case h.badID:
			problems = append(problems, "a sub-handler has an empty id")
		case h.nilFn:
			problems = append(problems, fmt.Sprintf("sub-handler %q is nil", h.Options.ID))
		case seen[h.Options.ID]:
			problems = append(problems, fmt.Sprintf("sub-handler id %q is registered twice", h.Options.ID))
		}
		seen[h.Options.ID] = true
		problems = append(problems, h.Options.problems...)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}
