package gopf

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
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

// ReconcileFunc is a level-based handler; see handlers.ReconcileFunc.
type ReconcileFunc[T client.Object] = handlers.ReconcileFunc[T]

// Labels selects objects by labels; see handlers.Labels.
type Labels = handlers.Labels

// Annotations selects objects by annotations; see handlers.Annotations.
type Annotations = handlers.Annotations

// Filter matches one label, annotation or field value; see handlers.Filter.
type Filter = handlers.Filter

// Patch collects a handler's changes to its object; see handlers.Patch.
type Patch = handlers.Patch

// Diff lists changes between two essences; see handlers.Diff.
type Diff = handlers.Diff

// TemporaryError asks for a retry after a delay; see handlers.TemporaryError.
type TemporaryError = handlers.TemporaryError

// PermanentError fails a handler for the current cause; see handlers.PermanentError.
type PermanentError = handlers.PermanentError

// The reasons a change handler is called for; see handlers.Reason.
const (
	ReasonCreate = handlers.ReasonCreate
	ReasonUpdate = handlers.ReasonUpdate
	ReasonDelete = handlers.ReasonDelete
	ReasonResume = handlers.ReasonResume
)

// How errors other than TemporaryError and PermanentError are treated; see
// handlers.ErrorMode.
const (
	ErrorsTemporary = handlers.ErrorsTemporary
	ErrorsPermanent = handlers.ErrorsPermanent
	ErrorsIgnored   = handlers.ErrorsIgnored
)

// Present and Absent match any value and a missing value.
var (
	Present = handlers.Present
	Absent  = handlers.Absent
)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return handlers.NewRegistry() }

// OnCreate registers fn to run once for each new object; see handlers.OnCreate.
func OnCreate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	handlers.OnCreate(r, fn, opts...)
}

// OnUpdate registers fn to run when an object's essence changes; see
// handlers.OnUpdate.
func OnUpdate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	handlers.OnUpdate(r, fn, opts...)
}

// OnDelete registers fn to run before an object disappears; see
// handlers.OnDelete.
func OnDelete[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	handlers.OnDelete(r, fn, opts...)
}

// OnResume registers fn to run once per process for each handled object; see
// handlers.OnResume.
func OnResume[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	handlers.OnResume(r, fn, opts...)
}

// OnField registers fn to run when a field changes; see handlers.OnField.
func OnField[T client.Object](r *Registry, path string, fn HandlerFunc[T], opts ...Option) {
	handlers.OnField(r, path, fn, opts...)
}

// OnReconcile registers a level-based handler; see handlers.OnReconcile.
func OnReconcile[T client.Object](r *Registry, fn ReconcileFunc[T], opts ...Option) {
	handlers.OnReconcile(r, fn, opts...)
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

// When selects objects with a typed predicate; see handlers.When.
func When[T client.Object](fn func(obj T) bool) Option { return handlers.When(fn) }

// Field narrows a handler to one field; see handlers.Field.
func Field(path string) Option { return handlers.Field(path) }

// Value filters the field's value, old or new; see handlers.Value.
func Value(v any) Option { return handlers.Value(v) }

// OldValue filters the field's value before the change; see handlers.OldValue.
func OldValue(v any) Option { return handlers.OldValue(v) }

// NewValue filters the field's value after the change; see handlers.NewValue.
func NewValue(v any) Option { return handlers.NewValue(v) }

// Equal matches a value equal to v; see handlers.Equal.
func Equal(v any) Filter { return handlers.Equal(v) }

// Errors sets how other errors are treated; see handlers.Errors.
func Errors(mode handlers.ErrorMode) Option { return handlers.Errors(mode) }

// Retries limits the attempts per cause; see handlers.Retries.
func Retries(n int) Option { return handlers.Retries(n) }

// Timeout limits the time per cause; see handlers.Timeout.
func Timeout(d time.Duration) Option { return handlers.Timeout(d) }

// Backoff sets the delay before a retry; see handlers.Backoff.
func Backoff(d time.Duration) Option { return handlers.Backoff(d) }

// Optional makes a delete handler optional; see handlers.Optional.
func Optional() Option { return handlers.Optional() }

// Deleted makes a resume handler run for objects being deleted too.
func Deleted() Option { return handlers.Deleted() }

// Temporary wraps err to ask for a retry after delay; see handlers.Temporary.
func Temporary(err error, delay time.Duration) error { return handlers.Temporary(err, delay) }

// Permanent wraps err to fail the handler for this cause; see handlers.Permanent.
func Permanent(err error) error { return handlers.Permanent(err) }

// Daemon is what a daemon function receives; see handlers.Daemon.
type Daemon[T client.Object] = handlers.Daemon[T]

// DaemonFunc is a long-running function per object; see handlers.DaemonFunc.
type DaemonFunc[T client.Object] = handlers.DaemonFunc[T]

// StopReason says why a daemon is asked to stop; see handlers.StopReason.
type StopReason = handlers.StopReason

// The reasons a daemon is asked to stop.
const (
	StopDeleted         = handlers.StopDeleted
	StopFiltersMismatch = handlers.StopFiltersMismatch
	StopOperatorExiting = handlers.StopOperatorExiting
)

// OnTimer registers fn to run periodically per object; see handlers.OnTimer.
func OnTimer[T client.Object](r *Registry, interval time.Duration, fn HandlerFunc[T], opts ...Option) {
	handlers.OnTimer(r, interval, fn, opts...)
}

// OnDaemon registers a long-running function per object; see handlers.OnDaemon.
func OnDaemon[T client.Object](r *Registry, fn DaemonFunc[T], opts ...Option) {
	handlers.OnDaemon(r, fn, opts...)
}

// InitialDelay postpones a timer's or daemon's first run; see handlers.InitialDelay.
func InitialDelay(d time.Duration) Option { return handlers.InitialDelay(d) }

// Idle makes a timer wait for the object to stop changing; see handlers.Idle.
func Idle(d time.Duration) Option { return handlers.Idle(d) }

// Sharp aligns a timer to its interval; see handlers.Sharp.
func Sharp() Option { return handlers.Sharp() }

// CancellationBackoff is a daemon's grace period; see handlers.CancellationBackoff.
func CancellationBackoff(d time.Duration) Option { return handlers.CancellationBackoff(d) }

// CancellationTimeout bounds the wait for a cancelled daemon; see
// handlers.CancellationTimeout.
func CancellationTimeout(d time.Duration) Option { return handlers.CancellationTimeout(d) }

// EventType is the kind of watch event an OnEvent handler sees.
type EventType = handlers.EventType

// The watch events; see handlers.EventType.
const (
	EventListed   = handlers.EventListed
	EventAdded    = handlers.EventAdded
	EventModified = handlers.EventModified
	EventDeleted  = handlers.EventDeleted
)

// EventFunc is a raw event handler; see handlers.EventFunc.
type EventFunc[T client.Object] = handlers.EventFunc[T]

// IndexFunc maps an object to index entries; see handlers.IndexFunc.
type IndexFunc[T client.Object] = handlers.IndexFunc[T]

// OnEvent registers a raw event handler; see handlers.OnEvent.
func OnEvent[T client.Object](r *Registry, fn EventFunc[T], opts ...Option) {
	handlers.OnEvent(r, fn, opts...)
}

// OnIndex registers an in-memory index; see handlers.OnIndex.
func OnIndex[T client.Object](r *Registry, name string, fn IndexFunc[T], opts ...Option) {
	handlers.OnIndex(r, name, fn, opts...)
}

// Adopt makes child belong to owner; see handlers.Adopt.
func Adopt(owner, child client.Object) error { return handlers.Adopt(owner, child) }

// Owns reconciles the owner when its children change; see handlers.Owns.
func Owns(obj client.Object) Option { return handlers.Owns(obj) }

// AdmissionFunc is a validating or mutating handler; see handlers.AdmissionFunc.
type AdmissionFunc[T client.Object] = handlers.AdmissionFunc[T]

// Admission is what an admission handler receives; see handlers.Admission.
type Admission[T client.Object] = handlers.Admission[T]

// AdmissionError denies an admission request; see handlers.AdmissionError.
type AdmissionError = handlers.AdmissionError

// Operation is an admission operation; see handlers.Operation.
type Operation = handlers.Operation

// The admission operations.
const (
	OperationCreate  = handlers.OperationCreate
	OperationUpdate  = handlers.OperationUpdate
	OperationDelete  = handlers.OperationDelete
	OperationConnect = handlers.OperationConnect
)

// OnValidate registers a validating admission handler; see handlers.OnValidate.
func OnValidate[T client.Object](r *Registry, fn AdmissionFunc[T], opts ...Option) {
	handlers.OnValidate(r, fn, opts...)
}

// OnMutate registers a mutating admission handler; see handlers.OnMutate.
func OnMutate[T client.Object](r *Registry, fn AdmissionFunc[T], opts ...Option) {
	handlers.OnMutate(r, fn, opts...)
}

// Deny denies an admission request with a code and message; see handlers.Deny.
func Deny(code int, message string) error { return handlers.Deny(code, message) }

// Operations limits an admission handler to operations; see handlers.Operations.
func Operations(ops ...Operation) Option { return handlers.Operations(ops...) }

// SubResource limits an admission handler to a subresource; see handlers.SubResource.
func SubResource(name string) Option { return handlers.SubResource(name) }

// Persistent keeps a webhook configured after shutdown; see handlers.Persistent.
func Persistent() Option { return handlers.Persistent() }

// SideEffects declares that a webhook has side effects; see handlers.SideEffects.
func SideEffects() Option { return handlers.SideEffects() }

// IgnoreFailures lets requests through when the webhook fails; see handlers.IgnoreFailures.
func IgnoreFailures() Option { return handlers.IgnoreFailures() }

// WebhookTimeout sets a webhook's timeout; see handlers.WebhookTimeout.
func WebhookTimeout(d time.Duration) Option { return handlers.WebhookTimeout(d) }

// OnStartup registers an operator-level startup handler; see handlers.OnStartup.
func OnStartup(r *Registry, fn handlers.ActivityFunc, opts ...Option) {
	handlers.OnStartup(r, fn, opts...)
}

// OnCleanup registers an operator-level cleanup handler; see handlers.OnCleanup.
func OnCleanup(r *Registry, fn handlers.ActivityFunc, opts ...Option) {
	handlers.OnCleanup(r, fn, opts...)
}

// OnProbe registers a health probe; see handlers.OnProbe.
func OnProbe(r *Registry, fn handlers.ProbeFunc, opts ...Option) { handlers.OnProbe(r, fn, opts...) }

// Watches reconciles objects named by a mapping when another kind changes;
// see handlers.Watches.
func Watches(obj client.Object, mapFn func(ctx context.Context, obj client.Object) []types.NamespacedName) Option {
	return handlers.Watches(obj, mapFn)
}

// Func matches the values fn accepts; see handlers.Func.
func Func(fn func(value any) bool) Filter { return handlers.Func(fn) }

// InitialDelayFunc computes a timer's or daemon's initial delay per object;
// see handlers.InitialDelayFunc.
func InitialDelayFunc[T client.Object](fn func(obj T) time.Duration) Option {
	return handlers.InitialDelayFunc(fn)
}

// Kubernetes event types, for Cause.Post.
const (
	EventNormal  = handlers.EventNormal
	EventWarning = handlers.EventWarning
)

// StopOperatorPausing: the operator pauses because a peer with a higher
// priority is alive; see handlers.StopOperatorPausing.
const StopOperatorPausing = handlers.StopOperatorPausing

// ErrRetriesExhausted and ErrTimeout are the causes of the failures gopf
// records when a handler runs out of attempts or time.
var (
	ErrRetriesExhausted = handlers.ErrRetriesExhausted
	ErrTimeout          = handlers.ErrTimeout
)
