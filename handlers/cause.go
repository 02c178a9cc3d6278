package handlers

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
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
	// Reason is why the handler is called.
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

	// Retry counts earlier attempts of this handler for this cause: 0 on the
	// first call.
	Retry int
	// Started is when the first attempt of this handler for this cause began.
	Started time.Time

	// Log carries the object's identity and the handler id.
	Log logr.Logger

	// Param is the value given with the Param option at registration.
	Param any
}
