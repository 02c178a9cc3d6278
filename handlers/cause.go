package handlers

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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
	// cause handled in the same reconcile, or "" when there was none; other
	// handler kinds see "".
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
	// Old is nil on create and where a field was absent; New is nil on
	// delete and where a field is gone.
	Old, New any
	// Diff lists the changes from Old to New, with paths relative to what
	// Old and New are (see Diff for its shape): one DiffAdd of the whole
	// essence on create, or of the whole field when a field appears; one
	// DiffRemove when a field disappears; empty on resume and delete.
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
	// operator's. An object's memo starts as a shallow copy of the
	// operator's, as in Kopf: what startup handlers put there, every object
	// gets; what a handler sets in an object's memo stays there.
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

	// Event is the watch event an OnEvent handler is called for:
	// watch.Added, watch.Modified or watch.Deleted for changes while the
	// operator watches, and "" for the objects of the initial list (Kopf's
	// event type None: the informer lists them, no watch event happened), as
	// for other handlers.
	Event watch.EventType

	// Indexes are the operator's indexes, read through the Index that
	// OnIndex or OnFlatIndex returns.
	Indexes *Indexes

	x *extras // the engine's side of the call: Events, sub-handlers
}

// Result returns the result of the handler with the given id for this
// object, as it will be stored in status.<id> (decoded JSON), and whether
// there is one. gopf writes the results of all handlers of one reconcile
// together, after they return, so the object a handler receives does not
// show what earlier handlers of the same cause returned; Result does: the
// result an earlier handler returned in this reconcile, merged over what
// status.<id> holds, as the write will merge it. Kopf writes each result
// before the next handler runs, so a Kopf handler reading
// status["create_fn"] becomes c.Result("create_fn") in gopf. Handlers run
// in registration order, so only earlier handlers' results are there. It
// returns false for handler kinds without results (timers, daemons, event,
// index, admission and operator-level handlers).
func (c *Cause) Result(id string) (any, bool) {
	if c.x == nil || c.x.Result == nil {
		return nil, false
	}
	return c.x.Result(id)
}

// Post posts a Kubernetes Event about the object, through the manager's event
// recorder (which aggregates repeated events). eventType is Kubernetes'
// corev1.EventTypeNormal or corev1.EventTypeWarning; messages over 1024
// bytes are cut. Posting is asynchronous and never fails the handler. Operator-level handlers have no object: for
// them Post does nothing.
func (c *Cause) Post(eventType, reason, message string) {
	if c.x == nil || c.x.Post == nil {
		return
	}
	c.x.Post(eventType, reason, message)
}

// PostAbout posts a Kubernetes Event about another object, such as a child
// the handler created (Kopf's kopf.event with other objects), with the
// handled object as the Event's related object. It behaves as Post
// otherwise; for several objects, call it for each.
func (c *Cause) PostAbout(obj client.Object, eventType, reason, message string) {
	if c.x == nil || c.x.PostAbout == nil || obj == nil {
		return
	}
	c.x.PostAbout(obj, eventType, reason, message)
}

// Info posts a Normal Event about the object.
func (c *Cause) Info(reason, format string, args ...any) {
	c.Post(corev1.EventTypeNormal, reason, fmt.Sprintf(format, args...))
}

// Warn posts a Warning Event about the object.
func (c *Cause) Warn(reason, format string, args ...any) {
	c.Post(corev1.EventTypeWarning, reason, fmt.Sprintf(format, args...))
}

// Exception posts a Warning Event with reason "Error" and the error's
// message; a nil error posts nothing. For another reason (Kopf's
// kopf.exception(reason=...)), use Warn(reason, "%v", err).
func (c *Cause) Exception(err error) {
	if err == nil {
		return
	}
	c.Post(corev1.EventTypeWarning, "Error", err.Error())
}
