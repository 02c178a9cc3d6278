package spec

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options are the resolved settings of one handler. Package handlers fills
// them from the options a registration was given and checks that each one
// applies to the handler's kind; the engines read them. A zero field means
// the default documented on the option of the same name in package handlers.
type Options struct {
	// ID names the handler; it keys stored progress and status.<ID>.
	ID string
	// Param is handed to the handler as Cause.Param.
	Param any

	// GVK or Resource name the kind of an unstructured handler's objects.
	GVK      schema.GroupVersionKind
	Resource string
	// Kinds, instead, chooses several kinds among those served.
	Kinds *KindSelector

	// Labels, Annotations, When, Field and Value select objects; Old and
	// New filter a changed field's old and new value. Field is the field's
	// path as keys (nil for none).
	Labels      map[string]Filter
	Annotations map[string]Filter
	When        func(obj client.Object, ixs *Indexes) bool
	Field       []string
	Value       *Filter
	Old         *Filter
	New         *Filter

	// Errors, Retries, Timeout and Backoff are the handler's error policy.
	Errors  ErrorMode
	Retries int
	Timeout time.Duration
	Backoff time.Duration
	// CallTimeout bounds each call of the handler (0: no bound).
	CallTimeout time.Duration

	// Optional: a delete handler that adds no finalizer.
	Optional bool
	// Deleted: a resume handler that also runs for objects being deleted.
	Deleted bool

	// Interval, InitialDelay(Func), Idle and Sharp are a timer's schedule;
	// InitialDelay(Func) also delays a daemon's start.
	Interval         time.Duration
	InitialDelay     time.Duration
	InitialDelayFunc func(obj client.Object) time.Duration
	Idle             time.Duration
	Sharp            bool
	// CancellationBackoff and CancellationTimeout govern a daemon's stop.
	CancellationBackoff time.Duration
	CancellationTimeout time.Duration

	// Owned and Watched are secondary kinds whose changes reconcile the
	// handler's objects again.
	Owned   []client.Object
	Watched []Watch

	// Uses are what the handler declared it does through its client with
	// objects of other kinds (handlers.Uses); only RBAC reads them.
	Uses []Use

	// Admission handlers' settings.
	Operations     []string
	SubResource    string
	Persistent     bool
	SideEffects    bool
	IgnoreFailures bool
	WebhookTimeout time.Duration
}

// Watch is one secondary kind a handler's kind watches, with the mapping
// from a changed object to the objects to reconcile.
type Watch struct {
	// Object is an empty object of the watched kind.
	Object client.Object
	// Map names the objects to reconcile for a change of a watched object.
	Map func(ctx context.Context, obj client.Object) []types.NamespacedName
}

// Use is one kind a handler works with through its client, and the RBAC
// verbs it needs on it.
type Use struct {
	// Object is an empty object of the kind; nil when Resource names it.
	Object client.Object
	// Resource names the kind by resource, as ForResource does.
	Resource string
	// Verbs are RBAC verbs, such as "create" and "patch".
	Verbs []string
}

// ErrorMode says how an error that is neither temporary nor permanent is
// treated.
type ErrorMode int

const (
	// ErrorsTemporary retries the handler after its backoff. The default.
	ErrorsTemporary ErrorMode = iota
	// ErrorsPermanent fails the handler for the current cause.
	ErrorsPermanent
	// ErrorsIgnored logs the error and treats the handler as done, with no
	// result.
	ErrorsIgnored
)

// String names the mode.
func (m ErrorMode) String() string {
	switch m {
	case ErrorsTemporary:
		return "temporary"
	case ErrorsPermanent:
		return "permanent"
	case ErrorsIgnored:
		return "ignored"
	}
	return fmt.Sprintf("ErrorMode(%d)", int(m))
}
