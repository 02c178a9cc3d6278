package handlers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option configures one handler registration. Options is an Option itself,
// and so is each of the small helpers below (ID, WithParam, ForKind,
// ForResource): use whichever reads better.
type Option interface {
	// ApplyToHandler copies the option's non-zero settings into o.
	ApplyToHandler(o *Options)
}

// Options are the settings of one handler registration. The zero value of
// every field means "the default" as documented on the field.
type Options struct {
	// ID names the handler. It keys the handler's stored progress and the
	// place its result goes to (status.<ID>), so it should not change between
	// releases of an operator. Default: the Go name of a named function
	// (createFn for func createFn), or "<reason>_fn" for a function literal
	// (create_fn, update_fn, ...), with a suffix _2, _3, ... for the second
	// and later literals of the same reason and kind. Give literals an
	// explicit ID when their registration order may change.
	ID string

	// Param is handed to the handler as Cause.Param, so that one function can
	// be registered several times with different settings.
	Param any

	// Kind names the kind of unstructured objects the handler is for. Only
	// for handlers of *unstructured.Unstructured; typed handlers take their
	// kind from their Go type. Exactly one of Kind and Resource is needed for
	// unstructured handlers.
	Kind schema.GroupVersionKind

	// Resource names the kind of unstructured objects by resource name, as
	// kubectl takes it: "kopfexamples", "kopfexamples.kopf.dev" or
	// "kopfexamples.v1.kopf.dev" (plural or singular). It is resolved with the
	// manager's REST mapper at setup; a name that resolves to nothing is an
	// error then.
	Resource string

	// Labels and Annotations select objects by metadata; every entry must
	// match. An object no handler of its kind selects is left alone
	// completely: no finalizer, no stored state, no log lines. See the Labels
	// and Annotations options for the shorthand forms.
	Labels      map[string]Filter
	Annotations map[string]Filter
	// When selects objects with a predicate on the whole object, evaluated
	// after the other filters. See the When option for a typed form.
	When func(obj client.Object) bool

	// Field narrows the handler to one dotted field path; see the Field
	// option. Value, Old and New filter that field's value (nil: any value).
	Field string
	Value *Filter
	Old   *Filter
	New   *Filter

	// Errors says how errors other than TemporaryError and PermanentError
	// are treated. Default: ErrorsTemporary.
	Errors ErrorMode
	// Retries is the number of attempts in total for one cause, after which
	// the handler is failed permanently. Default: 0, no limit.
	Retries int
	// Timeout is how long after its first attempt a handler may keep
	// retrying for one cause before it is failed permanently. Default: 0, no
	// limit.
	Timeout time.Duration
	// Backoff is the delay before retrying after an error that did not say
	// how long to wait. Default: the engine's default backoff.
	Backoff time.Duration

	// Optional, for delete handlers, means no finalizer is added for this
	// handler: it runs only if something else holds the object back.
	Optional bool
	// Deleted, for resume handlers, means they also run for objects that are
	// already being deleted when first seen.
	Deleted bool

	// Interval is a timer's period; see OnTimer.
	Interval time.Duration
	// InitialDelay postpones a timer's or daemon's first run.
	InitialDelay time.Duration
	// InitialDelayFunc computes the initial delay per object; it wins over
	// InitialDelay.
	InitialDelayFunc func(obj client.Object) time.Duration
	// Idle makes a timer wait until the object's essence has not changed for
	// that long.
	Idle time.Duration
	// Sharp aligns a timer to multiples of its interval.
	Sharp bool
	// CancellationBackoff and CancellationTimeout govern how a daemon is
	// stopped; see the options of the same names.
	CancellationBackoff time.Duration
	CancellationTimeout time.Duration

	// Owned and Watched are secondary kinds whose changes reconcile objects
	// of the handler's kind; see Owns and Watches.
	Owned   []client.Object
	Watched []Watch

	fieldHandler bool      // registered with OnField
	spawn        spawnKind // timer or daemon
	watch        watchKind // event handler or index
	named        any       // the user's function, for the default id

	// problems collects what the shorthand options could not accept.
	problems []string
}

// ApplyToHandler implements Option: non-zero fields of o override those in
// target.
func (o Options) ApplyToHandler(target *Options) {
	if o.ID != "" {
		target.ID = o.ID
	}
	if o.Param != nil {
		target.Param = o.Param
	}
	if !o.Kind.Empty() {
		target.Kind = o.Kind
	}
	if o.Resource != "" {
		target.Resource = o.Resource
	}
	for k, f := range o.Labels {
		if target.Labels == nil {
			target.Labels = map[string]Filter{}
		}
		target.Labels[k] = f
	}
	for k, f := range o.Annotations {
		if target.Annotations == nil {
			target.Annotations = map[string]Filter{}
		}
		target.Annotations[k] = f
	}
	if o.When != nil {
		target.When = o.When
	}
	if o.Field != "" {
		target.Field = o.Field
	}
	if o.Value != nil {
		target.Value = o.Value
	}
	if o.Old != nil {
		target.Old = o.Old
	}
	if o.New != nil {
		target.New = o.New
	}
	if o.Errors != ErrorsTemporary {
		target.Errors = o.Errors
	}
	if o.Retries != 0 {
		target.Retries = o.Retries
	}
	if o.Timeout != 0 {
		target.Timeout = o.Timeout
	}
	if o.Backoff != 0 {
		target.Backoff = o.Backoff
	}
	target.Optional = target.Optional || o.Optional
	target.Deleted = target.Deleted || o.Deleted
	if o.Interval != 0 {
		target.Interval = o.Interval
	}
	if o.InitialDelay != 0 {
		target.InitialDelay = o.InitialDelay
	}
	if o.InitialDelayFunc != nil {
		target.InitialDelayFunc = o.InitialDelayFunc
	}
	if o.Idle != 0 {
		target.Idle = o.Idle
	}
	target.Sharp = target.Sharp || o.Sharp
	if o.CancellationBackoff != 0 {
		target.CancellationBackoff = o.CancellationBackoff
	}
	if o.CancellationTimeout != 0 {
		target.CancellationTimeout = o.CancellationTimeout
	}
	if o.spawn != spawnNone {
		target.spawn = o.spawn
	}
	if o.watch != watchNone {
		target.watch = o.watch
	}
	if o.named != nil {
		target.named = o.named
	}
	target.Owned = append(target.Owned, o.Owned...)
	target.Watched = append(target.Watched, o.Watched...)
	target.fieldHandler = target.fieldHandler || o.fieldHandler
	target.problems = append(target.problems, o.problems...)
}

// Errors sets how errors other than TemporaryError and PermanentError are
// treated; see ErrorMode.
func Errors(mode ErrorMode) Option { return Options{Errors: mode} }

// Retries limits a handler to n attempts in total for one cause.
func Retries(n int) Option {
	if n <= 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Retries must be positive") })
	}
	return Options{Retries: n}
}

// Timeout limits how long after its first attempt a handler may keep
// retrying for one cause.
func Timeout(d time.Duration) Option {
	if d <= 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Timeout must be positive") })
	}
	return Options{Timeout: d}
}

// Backoff sets the delay before retrying after an error that did not say how
// long to wait.
func Backoff(d time.Duration) Option {
	if d <= 0 {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Backoff must be positive") })
	}
	return Options{Backoff: d}
}

// Optional makes a delete handler optional: no finalizer is added for it.
func Optional() Option { return Options{Optional: true} }

// Deleted makes a resume handler also run for objects already being deleted.
func Deleted() Option { return Options{Deleted: true} }

// ID sets the handler's id; see Options.ID.
func ID(id string) Option { return Options{ID: id} }

// WithParam sets the value handed to the handler as Cause.Param.
func WithParam(param any) Option { return Options{Param: param} }

// ForKind names the kind of an unstructured handler by group, version and
// kind, e.g. ForKind("kopf.dev", "v1", "KopfExample"). Use "" as the group of
// core kinds.
func ForKind(group, version, kind string) Option {
	return Options{Kind: schema.GroupVersionKind{Group: group, Version: version, Kind: kind}}
}

// ForResource names the kind of an unstructured handler by resource name;
// see Options.Resource.
func ForResource(name string) Option { return Options{Resource: name} }

// Owns makes changes of child objects of obj's kind that the handler's kind
// controls (through a controller owner reference, as Adopt sets) reconcile
// the owner again, so that its OnReconcile handlers see them. Change
// handlers of the owner are not called for them: the owner's essence did not
// change.
func Owns(obj client.Object) Option {
	if obj == nil {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Owns(nil)") })
	}
	return Options{Owned: []client.Object{obj}}
}

// Watches makes changes of objects of obj's kind reconcile the objects that
// mapFn names (of the handler's kind), like Owns for relations other than
// ownership.
func Watches(obj client.Object, mapFn func(ctx context.Context, obj client.Object) []types.NamespacedName) Option {
	if obj == nil || mapFn == nil {
		return optionFunc(func(o *Options) { o.problems = append(o.problems, "Watches needs an object and a mapping function") })
	}
	return Options{Watched: []Watch{{Object: obj, Map: mapFn}}}
}

// Watch is one secondary kind a handler's kind watches; see Watches.
type Watch struct {
	// Object is an empty object of the watched kind.
	Object client.Object
	// Map names the objects to reconcile for a change of a watched object.
	Map func(ctx context.Context, obj client.Object) []types.NamespacedName
}
