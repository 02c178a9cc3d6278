package handlers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Each registration function takes the options of its own handler kind, as
// controller-runtime's builder does (ForOption, OwnsOption): an option that
// a kind does not have does not compile there. Each option interface lists
// the options it accepts, and the option functions below say in their
// documentation which kinds take them. The option values' own types are
// unexported on purpose (revive's unexported-return would flag them; the
// project does not enable it): users pass options, never name their types,
// and an option held in a variable is named by its registration's
// interface (CreateOption, ...).

// CreateOption is an option of OnCreate.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Errors, Retries, Timeout, Backoff,
// CallTimeout.
type CreateOption interface {
	applyTo(*draft)
	create()
}

// UpdateOption is an option of OnUpdate and OnField.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, OldValue, NewValue, Errors, Retries, Timeout,
// Backoff, CallTimeout.
type UpdateOption interface {
	applyTo(*draft)
	update()
}

// DeleteOption is an option of OnDelete.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Errors, Retries, Timeout, Backoff, Optional,
// CallTimeout.
type DeleteOption interface {
	applyTo(*draft)
	delete()
}

// ResumeOption is an option of OnResume.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Errors, Retries, Timeout, Backoff, Deleted,
// CallTimeout.
type ResumeOption interface {
	applyTo(*draft)
	resume()
}

// ReconcileOption is an option of OnReconcile.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Owns, Watches, CallTimeout.
type ReconcileOption interface {
	applyTo(*draft)
	reconcile()
}

// TimerOption is an option of OnTimer.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Errors, Retries, Timeout, Backoff,
// InitialDelay, InitialDelayFunc, Idle, Sharp, CallTimeout.
type TimerOption interface {
	applyTo(*draft)
	timer()
}

// DaemonOption is an option of OnDaemon.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value, Errors, Retries, Timeout, Backoff,
// InitialDelay, InitialDelayFunc, CancellationBackoff, CancellationTimeout.
type DaemonOption interface {
	applyTo(*draft)
	daemon()
}

// EventOption is an option of OnEvent.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, ForCategory, ForKinds, When, Labels,
// Annotations, Field, Value.
type EventOption interface {
	applyTo(*draft)
	event()
}

// IndexOption is an option of OnIndex.
//
// Options: ForKind, ForResource, When, Labels, Annotations,
// Field, Value.
type IndexOption interface {
	applyTo(*draft)
	index()
}

// ActivityOption is an option of OnStartup and OnCleanup.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, Errors, Retries,
// Timeout, Backoff, CallTimeout.
type ActivityOption interface {
	applyTo(*draft)
	activity()
}

// ProbeOption is an option of OnProbe.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource.
type ProbeOption interface {
	applyTo(*draft)
	probe()
}

// AdmissionOption is an option of OnValidate and OnMutate.
//
// Options: ID, WithParam, Uses, UsesKind, UsesResource, ForKind,
// ForResource, When, Labels, Annotations, Field, Value,
// Operations, SubResource, Persistent, SideEffects, IgnoreFailures,
// WebhookTimeout.
type AdmissionOption interface {
	applyTo(*draft)
	admission()
}

// SubOption is an option of a sub-handler (Cause.Register).
//
// Options: Errors, Retries, Timeout, Backoff, CallTimeout.
type SubOption interface {
	applyTo(*draft)
	sub()
}

// draft is a registration's options as they are applied, with what the
// options could not accept.
type draft struct {
	spec.Options
	problems []string
}

func (d *draft) problem(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// setting is what every option value holds: how it changes a draft.
type setting struct{ apply func(*draft) }

func (s setting) applyTo(d *draft) {
	if s.apply != nil {
		s.apply(d)
	}
}

func set(fn func(*draft)) setting { return setting{apply: fn} }

// rejected is an option value that makes the registration bad with msg.
func rejected(msg string) setting { return set(func(d *draft) { d.problem("%s", msg) }) }

// The markers: an option value implements the interface of every handler
// kind whose marker it embeds.
type (
	forCreate    struct{}
	forUpdate    struct{}
	forDelete    struct{}
	forResume    struct{}
	forReconcile struct{}
	forTimer     struct{}
	forDaemon    struct{}
	forEvent     struct{}
	forIndex     struct{}
	forActivity  struct{}
	forProbe     struct{}
	forAdmission struct{}
	forSub       struct{}
)

func (forCreate) create()       {}
func (forUpdate) update()       {}
func (forDelete) delete()       {}
func (forResume) resume()       {}
func (forReconcile) reconcile() {}
func (forTimer) timer()         {}
func (forDaemon) daemon()       {}
func (forEvent) event()         {}
func (forIndex) index()         {}
func (forActivity) activity()   {}
func (forProbe) probe()         {}
func (forAdmission) admission() {}
func (forSub) sub()             {}

// Groups of markers, which never overlap (an option embedding two groups
// with a marker in common would implement neither interface).
type (
	// forChanges marks the change handlers' options.
	forChanges struct {
		forCreate
		forUpdate
		forDelete
		forResume
	}
	// forSpawned marks the options of timers and daemons.
	forSpawned struct {
		forTimer
		forDaemon
	}
	// forWatched marks the options of the handlers of objects that a
	// controller or the informer runs: all but admission handlers.
	forWatched struct {
		forChanges
		forSpawned
		forReconcile
		forEvent
		forIndex
	}
	// forObjects marks the options of every handler kind that is for
	// objects of a kind.
	forObjects struct {
		forWatched
		forAdmission
	}
)

// commonSetting is an option every handler kind with an id and a Cause
// takes: all but OnIndex (its name is its id) and sub-handlers (their id is
// given to Register).
type commonSetting struct {
	setting
	forChanges
	forSpawned
	forReconcile
	forEvent
	forActivity
	forProbe
	forAdmission
}

// ID sets the handler's id. It keys the handler's stored progress and the
// place its result goes to (status.<id>), so it should not change between
// releases of an operator. Default: the Go name of a named function
// (createFn for func createFn), or "<kind>_fn" for a function literal
// (create_fn, update_fn, timer_fn, ...), with a suffix _2, _3, ... for the
// second and later literals of the same kind and object kind; field
// handlers add "/<field>". Give literals an explicit ID when their
// registration order may change.
//
// An operator that takes over from a Kopf operator keeps Kopf's ids, so
// that it finds Kopf's progress and results: Kopf names a handler after its
// Python function (create_fn) and a field handler after the function and
// the field (field_fn/spec.field), sub-handlers <parent>/<sub>. Register
// each handler with ID and Kopf's id, e.g. ID("create_fn") for a Go
// function createFn. gopf logs a warning, once per record, for Kopf
// progress of a handler it does not have (see docs/migrating-from-kopf.md).
//
// Every registration but OnIndex and sub-handlers takes it.
func ID(id string) commonSetting {
	if id == "" {
		return commonSetting{setting: rejected(`ID("") is not an id; leave the option out for the default`)}
	}
	return commonSetting{setting: set(func(d *draft) { d.ID = id })}
}

// WithParam sets the value handed to the handler as Cause.Param, so that
// one function can be registered several times with different settings.
//
// Every registration but OnIndex and sub-handlers takes it.
func WithParam(param any) commonSetting {
	return commonSetting{setting: set(func(d *draft) { d.Param = param })}
}

// Uses declares what the handler does through its client (Cause.Client or
// a client of its own) with objects of obj's kind — creating children,
// reading Secrets, patching other kinds — as RBAC verbs: "get", "list",
// "watch", "create", "update", "patch", "delete", "deletecollection".
// gopf cannot see inside handlers; with this declaration next to the
// registration, package reconcile/rbac's Permissions (and so --print-rbac and
// --check-rbac) grants the verbs beside what gopf itself needs. obj is an
// empty object of the kind: typed, or unstructured with its apiVersion and
// kind set; UsesKind and UsesResource name a kind without an object. Repeat
// the option for more kinds.
//
// Two verbs bring others. The operator's client reads from the informer
// cache, which lists and watches the kind: "get" and "list" also grant
// "list" and "watch". A handler of objects that creates objects may Adopt
// them, and the API server lets only those who may update the owner's
// finalizers set Adopt's blockOwnerDeletion: "create" also grants update on
// <handled kind>/finalizers.
//
// Every registration but OnIndex and sub-handlers takes it.
func Uses(obj client.Object, verbs ...string) commonSetting {
	if obj == nil || len(verbs) == 0 {
		return commonSetting{setting: rejected("Uses needs an object of the kind and at least one verb")}
	}
	return uses("Uses", spec.Use{Object: obj}, verbs)
}

// UsesKind is Uses for a kind named by group, version and kind, as ForKind
// names one: for kinds chosen by configuration, which have no Go type. Use
// "" as the group of core kinds.
//
// Every registration but OnIndex and sub-handlers takes it.
func UsesKind(group, version, kind string, verbs ...string) commonSetting {
	if version == "" || kind == "" || len(verbs) == 0 {
		return commonSetting{setting: rejected("UsesKind needs a version, a kind and at least one verb")}
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	return uses("UsesKind", spec.Use{Object: obj}, verbs)
}

// UsesResource is Uses for a kind named by resource, as ForResource names
// one ("secrets.v1." for core Secrets, "deployments.apps"): for kinds chosen
// by configuration, such as the resource name an unstructured handler is
// registered with. The name is resolved when the permissions are computed;
// one that resolves to nothing is an error then.
//
// Every registration but OnIndex and sub-handlers takes it.
func UsesResource(name string, verbs ...string) commonSetting {
	if name == "" || len(verbs) == 0 {
		return commonSetting{setting: rejected("UsesResource needs a resource name and at least one verb")}
	}
	return uses("UsesResource", spec.Use{Resource: name}, verbs)
}

// uses checks the verbs of a use and makes it an option.
func uses(option string, use spec.Use, verbs []string) commonSetting {
	for _, v := range verbs {
		if !rbacVerbs[v] {
			return commonSetting{setting: rejected(fmt.Sprintf("%s: %q is not an RBAC verb of objects (get, list, watch, create, update, patch, delete, deletecollection)", option, v))}
		}
	}
	use.Verbs = append([]string(nil), verbs...)
	return commonSetting{setting: set(func(d *draft) { d.Uses = append(d.Uses, use) })}
}

// rbacVerbs are the verbs Uses accepts.
var rbacVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true,
}

// kindSetting names the kind of an unstructured handler's objects. Every
// handler kind that is for objects takes it.
type kindSetting struct {
	setting
	forObjects
}

// ForKind names the kind of an unstructured handler by group, version and
// kind, e.g. ForKind("kopf.dev", "v1", "KopfExample"). Use "" as the group of
// core kinds. Typed handlers take their kind from their Go type.
//
// Every registration of objects takes it (all but OnStartup, OnCleanup, OnProbe and sub-handlers).
func ForKind(group, version, kind string) kindSetting {
	return kindSetting{setting: set(func(d *draft) {
		d.GVK = schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	})}
}

// ForResource names the kind of an unstructured handler by resource name,
// as kubectl takes it: "kopfexamples", "kopfexamples.kopf.dev" or
// "kopfexamples.v1.kopf.dev" (plural or singular). Core kinds have the
// empty group: "secrets", or "secrets.v1." with a version (the trailing dot
// ends the empty group name). It is resolved with the
// manager's REST mapper at setup; a name that resolves to nothing is an
// error then.
//
// Every registration of objects takes it (all but OnStartup, OnCleanup, OnProbe and sub-handlers).
func ForResource(name string) kindSetting {
	return kindSetting{setting: set(func(d *draft) { d.Resource = name })}
}

// kindsSetting makes an unstructured handler a handler of several kinds at
// once, chosen among the kinds the API server serves. Change, level, timer,
// daemon and event handlers take it; an index (filled from one kind) and
// admission handlers (whose webhook rules are written at start) do not.
type kindsSetting struct {
	setting
	forChanges
	forSpawned
	forReconcile
	forEvent
}

// ForCategory makes an unstructured handler handle every served kind in the
// category name, as Kopf's category= does: the categories a CRD lists in
// spec.names.categories, or "all" for the built-in kinds that kubectl get
// all shows. The kinds are looked up with discovery when the operator
// starts and again whenever a CustomResourceDefinition is created, changed
// or deleted: a kind that joins the category is handled from then on, one
// that leaves it or stops being served is no longer handled. Each kind gets
// a controller of its own, and the handler gets its objects as
// *unstructured.Unstructured of that kind. A kind that has handlers of its
// own (by Go type, ForKind or ForResource) is left to those. Permissions
// cannot know the kinds; see package reconcile/rbac's Permissions.
//
// Change, level, timer, daemon and event handlers take it; OnIndex and admission handlers do not.
func ForCategory(name string) kindsSetting {
	return kindsSetting{setting: set(func(d *draft) {
		if name == "" {
			d.problem("ForCategory needs a category name")
			return
		}
		d.Kinds = &spec.KindSelector{Category: name}
	})}
}

// ForKinds makes an unstructured handler handle every served kind for which
// match returns true, as Kopf's callable selectors and kopf.EVERYTHING
// (a match that always returns true) do. match sees the preferred version
// of each served kind that can be listed and watched, built-in kinds too;
// it must be quick and must not block. Otherwise ForKinds is as
// ForCategory: looked up at start and whenever a CRD changes, one
// controller per kind, kinds with handlers of their own left to those.
//
// Change, level, timer, daemon and event handlers take it; OnIndex and admission handlers do not.
func ForKinds(match func(schema.GroupVersionKind) bool) kindsSetting {
	return kindsSetting{setting: set(func(d *draft) {
		if match == nil {
			d.problem("ForKinds needs a non-nil function")
			return
		}
		d.Kinds = &spec.KindSelector{Match: match}
	})}
}

// errorSetting is an option of a handler's error policy. Change handlers,
// timers, daemons, operator-level handlers and sub-handlers take it; the
// engine applies one policy to all of them (see package reconcile).
type errorSetting struct {
	setting
	forChanges
	forSpawned
	forActivity
	forSub
}

// ErrorMode says how an error that is neither a TemporaryError nor a
// PermanentError is treated.
type ErrorMode = spec.ErrorMode

// The error modes.
const (
	// ErrorsTemporary retries the handler after its backoff. The default.
	ErrorsTemporary = spec.ErrorsTemporary
	// ErrorsPermanent fails the handler for the current cause.
	ErrorsPermanent = spec.ErrorsPermanent
	// ErrorsIgnored logs the error and treats the handler as done, with no
	// result.
	ErrorsIgnored = spec.ErrorsIgnored
)

// Errors sets how errors other than TemporaryError and PermanentError are
// treated. Default: ErrorsTemporary.
//
// Change handlers, timers, daemons, OnStartup, OnCleanup and sub-handlers take it.
func Errors(mode ErrorMode) errorSetting {
	if mode < ErrorsTemporary || mode > ErrorsIgnored {
		return errorSetting{setting: rejected(fmt.Sprintf("unknown error mode %d", int(mode)))}
	}
	return errorSetting{setting: set(func(d *draft) { d.Errors = mode })}
}

// positive is a setting of a duration that must be positive (or, with
// zeroOK, not negative): it assigns t, or makes the registration bad naming
// the option.
func positive(option string, t time.Duration, zeroOK bool, assign func(*draft)) setting {
	switch {
	case t < 0 && zeroOK:
		return rejected(option + " cannot be negative")
	case t <= 0 && !zeroOK:
		return rejected(option + " must be positive")
	}
	return set(assign)
}

// Retries limits a handler to n attempts in total for one cause (for a
// timer: one run; for a daemon: one start), after which it fails
// permanently. Default: no limit.
//
// Change handlers, timers, daemons, OnStartup, OnCleanup and sub-handlers take it.
func Retries(n int) errorSetting {
	if n <= 0 {
		return errorSetting{setting: rejected("Retries must be positive")}
	}
	return errorSetting{setting: set(func(d *draft) { d.Retries = n })}
}

// Timeout limits how long after its first attempt a handler may keep
// retrying for one cause (a timer: one run; a daemon: one start) before it
// fails permanently. Default: no limit.
//
// Change handlers, timers, daemons, OnStartup, OnCleanup and sub-handlers take it.
func Timeout(t time.Duration) errorSetting {
	return errorSetting{setting: positive("Timeout", t, false, func(d *draft) { d.Timeout = t })}
}

// Backoff sets the delay before retrying after an error that did not say
// how long to wait. Default: the engine's default backoff.
//
// Change handlers, timers, daemons, OnStartup, OnCleanup and sub-handlers take it.
func Backoff(t time.Duration) errorSetting {
	return errorSetting{setting: positive("Backoff", t, false, func(d *draft) { d.Backoff = t })}
}

// callTimeoutSetting is an option of the handlers gopf calls and waits
// for: change handlers, level handlers, timers, operator-level activities
// and sub-handlers. Daemons, which run until they are stopped, do not take
// it.
type callTimeoutSetting struct {
	setting
	forChanges
	forTimer
	forReconcile
	forActivity
	forSub
}

// CallTimeout bounds each call of a handler: the context the handler gets
// is cancelled t after the call began. A call that then fails (with the
// context's error or any other) counts as a failed attempt, said to have
// run out of its CallTimeout, and is retried or not as the error policy
// says (Errors, Retries, Timeout, Backoff): by default after the backoff.
// A call that returns a result anyway succeeds.
//
// Timeout, by contrast, counts from the first attempt and is checked
// between attempts, so a handler stuck in one call holds a worker until it
// returns; CallTimeout frees the worker after t, provided the handler
// honours its context. It costs a timer per call and nothing when unset.
// Default: no bound (but see the manager's ReconciliationTimeout, which
// bounds all handlers of one reconcile together).
//
// Change and level handlers, timers, OnStartup, OnCleanup and sub-handlers take it; daemons do not.
func CallTimeout(t time.Duration) callTimeoutSetting {
	return callTimeoutSetting{setting: positive("CallTimeout", t, false, func(d *draft) { d.CallTimeout = t })}
}

// deleteSetting is an option only OnDelete takes.
type deleteSetting struct {
	setting
	forDelete
}

// Optional makes a delete handler optional: gopf adds no finalizer for it,
// so it runs only if something else holds the object back.
//
// Only OnDelete takes it.
func Optional() deleteSetting {
	return deleteSetting{setting: set(func(d *draft) { d.Optional = true })}
}

// resumeSetting is an option only OnResume takes.
type resumeSetting struct {
	setting
	forResume
}

// Deleted makes a resume handler also run for objects that are already
// being deleted when first seen.
//
// Only OnResume takes it.
func Deleted() resumeSetting {
	return resumeSetting{setting: set(func(d *draft) { d.Deleted = true })}
}

// apply applies options of one kind to a new draft.
func apply[O interface{ applyTo(*draft) }](opts []O, prefix ...setting) *draft {
	d := &draft{}
	for _, s := range prefix {
		s.applyTo(d)
	}
	for _, o := range opts {
		if any(o) != nil {
			o.applyTo(d)
		}
	}
	return d
}
