package plan

import (
	"time"
)

// StatusAPIVersion versions the machine-readable form of ObjectStatus
// (`status -o json|yaml`): fields are added, never renamed or removed,
// within one version.
const StatusAPIVersion = "gopf.dev/v1alpha1"

// ObjectStatus is what the planner found on one object: where each handler
// stands, which finalizers hold the object and why, and what an operator
// would do with it on start.
type ObjectStatus struct {
	// APIVersion and Kind are the object's.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// State sums the object up in one word: the worst state of its
	// handlers (failed, retrying, pending), else done (a handled object),
	// idle (selected but never handled, with nothing to run), deleting
	// (its deletion is under way), unhandled (no handler selects it and
	// nothing is stored) or unreadable (the stored state cannot be read).
	State string `json:"state"`
	// Deleting is the deletion timestamp, if the object is being deleted.
	Deleting *time.Time `json:"deleting,omitempty"`
	// StateSource names where the stored state was read (such as
	// "status.gopf"); empty when nothing is stored.
	StateSource string `json:"stateSource,omitempty"`
	// StateError says why stored state cannot be read; the engine treats
	// such state as absent and handles the object as new.
	StateError string `json:"stateError,omitempty"`
	// StateWritten is when gopf last wrote the state, from the object's
	// managed fields; nil when they do not say.
	StateWritten *time.Time `json:"stateWritten,omitempty"`
	// Handled: a last-handled essence is stored, so a cause was completed.
	Handled bool `json:"handled"`
	// Changed: the object's essence differs from the last-handled one, so
	// update handlers have work (known only with the handlers).
	Changed bool `json:"changed,omitempty"`
	// Handlers are the handlers that select the object, then the records
	// of handlers the operator does not have, by id.
	Handlers []HandlerStatus `json:"handlers,omitempty"`
	// Finalizers are the object's finalizers, in order.
	Finalizers []FinalizerStatus `json:"finalizers,omitempty"`
	// Failures are the permanent failures of handlers on the object that
	// gopf reported as HandlerFailed Warning Events, oldest first, for as
	// long as the API server keeps Events (an hour by default). Once every
	// handler of a cause is finished its progress records go, and only the
	// Event tells of a failure: a handler whose failure came with the
	// last-handled state shows as failed (with Since, the failure's time).
	Failures []Failure `json:"failures,omitempty"`
	// OnStart is what an operator starting now would do with the object,
	// in order; empty for a planner that does not know the handlers.
	OnStart []Action `json:"onStart,omitempty"`
	// Shard is where the object stands in a sharding ring, from its
	// sharding labels; nil when it has none.
	Shard *ShardStatus `json:"shard,omitempty"`
}

// ShardStatus is where an object stands in a sharding ring (see
// docs/sharding.md): which shard works on it, and whether the ring's
// assigner is moving it away.
type ShardStatus struct {
	// Ring names the ring: the operator's when the planner knows it
	// (Sharding in its options), else the one the object's labels name
	// (the first in order if they name several).
	Ring string `json:"ring"`
	// Name is the shard the object is assigned to, from its label
	// shard.alpha.sharding.timebertt.dev/<ring>; empty while no shard
	// is, between a drain and the next assignment.
	Name string `json:"name,omitempty"`
	// Draining: the assigner asked the shard to let go of the object
	// (its label drain.alpha.sharding.timebertt.dev/<ring>); the shard
	// finishes the handler in flight, then removes both labels.
	Draining bool `json:"draining,omitempty"`
}

// HandlerState is where one handler stands on one object.
type HandlerState string

const (
	// HandlerDone: the handler succeeded for the current cause, or for the
	// last-handled state when nothing changed since.
	HandlerDone HandlerState = "done"
	// HandlerPending: the handler is due; an operator calls it now.
	HandlerPending HandlerState = "pending"
	// HandlerRetrying: the handler failed and is called again at
	// NextAttempt (or now, when that is nil).
	HandlerRetrying HandlerState = "retrying"
	// HandlerFailed: the handler failed permanently for the current cause.
	HandlerFailed HandlerState = "failed"
	// HandlerRunning: a timer or daemon that runs while the object exists,
	// on the operator that works (see HandlerStatus.Operator).
	HandlerRunning HandlerState = "running"
	// HandlerIdle: nothing to do for now (a delete handler of a live
	// object, a handler of a cause that has not happened).
	HandlerIdle HandlerState = "idle"
)

// The object states of ObjectStatus.State that are not handler states.
const (
	StateDeleting   = "deleting"
	StateUnhandled  = "unhandled"
	StateUnreadable = "unreadable"
)

// HandlerStatus is one handler's standing on one object.
type HandlerStatus struct {
	// ID is the handler's id, as its progress is stored.
	ID string `json:"id"`
	// Kind is the handler kind (create, update, field, delete, resume,
	// timer, daemon, reconcile); empty when the handler is not known.
	Kind  string       `json:"kind,omitempty"`
	State HandlerState `json:"state"`
	// Cause is the cause the handler's progress is for.
	Cause string `json:"cause,omitempty"`
	// Attempts counts the calls so far for the cause; the next call is
	// retry number Attempts.
	Attempts int `json:"attempts,omitempty"`
	// MaxAttempts is the handler's limit on attempts; 0 for none (or not
	// known).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// Started is the first attempt for the cause.
	Started *time.Time `json:"started,omitempty"`
	// NextAttempt is when a sleeping handler is due; nil when it is due now.
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	// Since is when a handler that is done became so (when only the time
	// of the state's last write tells it), or when a handler that failed
	// for good without a progress record failed.
	Since *time.Time `json:"since,omitempty"`
	// Message is the last error, or a note on the state.
	Message string `json:"message,omitempty"`
	// Operator is who runs a timer or daemon: the shard of a sharded
	// object, else the peering identity of the operator that works, when
	// peering names one.
	Operator string `json:"operator,omitempty"`
}

// Failure is one permanent failure of a handler, from its Event.
type Failure struct {
	Handler string    `json:"handler"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// FinalizerStatus is one finalizer on an object and why it is there.
type FinalizerStatus struct {
	Name string `json:"name"`
	// Owner is "gopf" for gopf's own finalizer, "kopf" for that of the Kopf
	// operator gopf takes over from (Options.KopfFinalizer), "other" for the
	// rest.
	Owner string `json:"owner"`
	Why   string `json:"why"`
}

// ActionVerb names what an operator would do on start.
type ActionVerb string

// The actions of a plan.
const (
	ActionNothing          ActionVerb = "nothing"
	ActionAddFinalizer     ActionVerb = "add-finalizer"
	ActionRemoveFinalizer  ActionVerb = "remove-finalizer"
	ActionReleaseFinalizer ActionVerb = "release-finalizer"
	ActionCall             ActionVerb = "call"
	ActionContinue         ActionVerb = "continue"
	ActionRecord           ActionVerb = "record"
	ActionStart            ActionVerb = "start"
	ActionStop             ActionVerb = "stop"
	// ActionHandOver: the object is being drained from its shard, which
	// lets go of it instead of handling it (see docs/sharding.md).
	ActionHandOver ActionVerb = "hand-over"
)

// Action is one step an operator would take with an object on start.
type Action struct {
	Do ActionVerb `json:"do"`
	// Handler is the handler concerned, if any.
	Handler string `json:"handler,omitempty"`
	// Retry is the retry number of a continued handler's next call.
	Retry int `json:"retry,omitempty"`
	// Due is when a continued handler's next call is due.
	Due *time.Time `json:"due,omitempty"`
	// Text says it in words, e.g. "continue flaky_fn (retry 2, due at ...)".
	Text string `json:"text"`
}
