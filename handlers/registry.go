package handlers

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Registry collects handler registrations. A Registry is safe for concurrent
// registration, but is meant to be filled before the operator starts.
type Registry struct {
	set  spec.Set[*Cause]
	bind sync.Once // sets set's binders, for the engines
}

// handler and extras are the engine contract's types for this package's
// Cause.
type (
	handler = spec.Handler[*Cause]
	extras  = spec.Extras[*Cause]
)

func init() {
	spec.ExposeSets(func(r any) any { return r.(*Registry).engineSet() })
}

// engineSet is the registry's Set as the engines use it: with the binder
// that gives a Cause the extras of its call.
func (r *Registry) engineSet() *spec.Set[*Cause] {
	r.bind.Do(func() {
		r.set.BindCause = func(c *Cause, x *extras) { c.x = x }
	})
	return &r.set
}

// NewRegistry returns an empty Registry; the zero Registry is empty and
// ready too.
func NewRegistry() *Registry { return &Registry{} }

// Err reports every bad registration so far, joined, or nil. Each error
// names the handler, where it was registered and what is wrong.
func (r *Registry) Err() error { return r.set.Err() }

// HandlerFunc is a change handler (or a timer) for objects of type T. A
// non-nil result is merged into status.<handler id> of the object. A nil
// error means the handler is done for this cause.
type HandlerFunc[T client.Object] func(ctx context.Context, obj T, c *Cause) (any, error)

// OnCreate registers fn to run once for each object of type T that gopf has
// not handled before: an object created while the operator runs, one created
// while it was down, or one that starts matching the handler's filters.
func OnCreate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...CreateOption) {
	registerCall(r, spec.KindCreate, fn, fn, apply(opts))
}

// OnUpdate registers fn to run when an already-handled object's essence
// changes (its spec, labels, annotations or other non-status fields). With
// the Field option, only when that field changed.
func OnUpdate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...UpdateOption) {
	registerCall(r, spec.KindUpdate, fn, fn, apply(opts))
}

// OnDelete registers fn to run when an object is being deleted. Unless the
// handler is Optional, gopf puts a finalizer on every selected object (before
// any create handler runs) and removes it once the delete handlers are done,
// so the handler runs before the object disappears.
func OnDelete[T client.Object](r *Registry, fn HandlerFunc[T], opts ...DeleteOption) {
	registerCall(r, spec.KindDelete, fn, fn, apply(opts))
}

// OnResume registers fn to run once per operator process for each
// already-handled object, on first sight: typically after a restart. It is
// not called for objects being deleted unless the Deleted option is given,
// and not for objects that get a create instead.
func OnResume[T client.Object](r *Registry, fn HandlerFunc[T], opts ...ResumeOption) {
	registerCall(r, spec.KindResume, fn, fn, apply(opts))
}

// OnField registers fn to run whenever the field at path (a FieldPath: a
// dotted string such as "spec.replicas", or the keys as a []string when a
// key contains dots) differs between the last-handled and the current
// object: on creation with the field set, and on updates that change it.
// Cause.Reason is the object's cause (ReasonCreate or ReasonUpdate), as in
// Kopf; a field that appeared shows as a Diff of one DiffAdd with an empty
// Path. The handler receives the field's old and new values as Cause.Old
// and Cause.New. Value, OldValue and NewValue filter them.
func OnField[T client.Object, P FieldPath](r *Registry, path P, fn HandlerFunc[T], opts ...UpdateOption) {
	given := Field(path)
	want := apply[UpdateOption](nil, given.setting).Field
	d := apply(opts, given.setting)
	if !slices.Equal(d.Field, want) {
		d.problem("OnField's path %s and the Field option %s disagree", spec.PathString(want), spec.PathString(d.Field))
	}
	registerCall(r, spec.KindField, fn, fn, d)
}

// OnReconcile registers a level-based handler: fn runs on every reconcile
// of every selected object (including resyncs), after the change handlers,
// with the same Cause and Patch, like a plain controller-runtime Reconciler
// that receives the object. Its Result and error are those of a
// controller-runtime Reconciler: they requeue the object, and its errors
// are not subject to the handler error policy (they go to controller-runtime's
// rate-limited requeue).
func OnReconcile[T client.Object](r *Registry, fn func(ctx context.Context, obj T, c *Cause) (reconcile.Result, error), opts ...ReconcileOption) {
	d := apply(opts)
	h := newHandler[T](spec.KindReconcile, d)
	if fn != nil {
		h.Reconcile = func(ctx context.Context, obj client.Object, c *Cause) (reconcile.Result, error) {
			typed, err := as[T](h, obj)
			if err != nil {
				return reconcile.Result{}, err
			}
			return fn(ctx, typed, c)
		}
	}
	r.add(h, fn, fn == nil, d.problems)
}

// reconcileSetting is an option only OnReconcile takes: the secondary kinds
// whose changes run the level handlers of their owners again.
type reconcileSetting struct {
	setting
	forReconcile
}

// Owns makes changes of child objects of obj's kind that the handler's kind
// controls (through a controller owner reference, as Adopt sets) reconcile
// the owner again, so that its OnReconcile handlers see them. Change
// handlers of the owner are not called for them: the owner's essence did not
// change.
//
// Only OnReconcile takes it.
func Owns(obj client.Object) reconcileSetting {
	if obj == nil {
		return reconcileSetting{setting: rejected("Owns(nil)")}
	}
	return reconcileSetting{setting: set(func(d *draft) { d.Owned = append(d.Owned, obj) })}
}

// Watches makes changes of objects of obj's kind reconcile the objects that
// mapFn names (of the handler's kind), like Owns for relations other than
// ownership.
//
// Only OnReconcile takes it.
func Watches(obj client.Object, mapFn func(ctx context.Context, obj client.Object) []types.NamespacedName) reconcileSetting {
	if obj == nil || mapFn == nil {
		return reconcileSetting{setting: rejected("Watches needs an object and a mapping function")}
	}
	return reconcileSetting{setting: set(func(d *draft) { d.Watched = append(d.Watched, spec.Watch{Object: obj, Map: mapFn}) })}
}

// registerCall registers a handler that is called with an object of type
// T: a change handler, a timer, an event or an index handler. named is the
// user's function (it names the handler), call calls it (nil if it is nil).
func registerCall[T client.Object](r *Registry, kind spec.Kind, named any, call HandlerFunc[T], d *draft) {
	h := newHandler[T](kind, d)
	if call != nil {
		h.Call = func(ctx context.Context, obj client.Object, c *Cause) (any, error) {
			typed, err := as[T](h, obj)
			if err != nil {
				return nil, err
			}
			return call(ctx, typed, c)
		}
	}
	r.add(h, named, call == nil, d.problems)
}

// newHandler starts a handler of kind for objects of type T.
func newHandler[T client.Object](kind spec.Kind, d *draft) *handler {
	h := &handler{Kind: kind, Options: d.Options, Source: callerSource()}
	var zero T
	_, h.Unstructured = any(zero).(*unstructured.Unstructured)
	h.NewObject = func() client.Object { return newObject[T]() }
	return h
}

// as gives obj in the handler's Go type.
func as[T client.Object](h *handler, obj client.Object) (T, error) {
	typed, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%s: got %T, want %T", h, obj, zero)
	}
	return typed, nil
}

// add defaults the handler's id from fn, validates it and keeps it.
// problems are those its options reported.
func (r *Registry) add(h *handler, fn any, nilFn bool, problems []string) {
	r.set.Add(h, func(earlier []*handler) []string {
		if h.Options.ID == "" && h.Kind != spec.KindIndex { // an index's id is its name
			h.Options.ID, h.DefaultedID = defaultID(h, fn, earlier)
		}
		var all []string
		if nilFn {
			all = append(all, "the handler function is nil")
		}
		all = append(all, problems...)
		all = append(all, h.Problems()...)
		for _, other := range earlier {
			if other.Options.ID == h.Options.ID && idSpace(other.Kind) == idSpace(h.Kind) && sameObjects(other, h) && !stacked(other.Kind, h.Kind) {
				all = append(all, fmt.Sprintf("id %q is already used by the %s handler registered at %s "+
					"(only one resume, one create and one update handler may share an id, as Kopf's stacked decorators do)",
					h.Options.ID, other.Kind, other.Source))
			}
		}
		return all
	})
}

// stacked reports whether handlers of kinds a and b may share an id, as
// Kopf's @kopf.on.resume, @kopf.on.create and @kopf.on.update stacked on
// one function do: they are of different kinds among resume, create and
// update, which never run for one cause (an update of an object that
// changed while the operator was down runs a resume handler too; of two
// that share an id, only the update handler runs then, as in Kopf). They
// share the progress record and the result field status.<id>.
func stacked(a, b spec.Kind) bool {
	changing := func(k spec.Kind) bool {
		return k == spec.KindResume || k == spec.KindCreate || k == spec.KindUpdate
	}
	return a != b && changing(a) && changing(b)
}

// idSpace groups the handler kinds whose ids must differ for one object
// kind: all handlers of objects share their stored progress and status
// keys; admission and operator-level handlers have their own.
func idSpace(k spec.Kind) spec.Kind {
	if k.Resource() && !k.Admission() {
		return spec.KindCreate
	}
	return k
}

// sameObjects reports whether two handlers are for the same kind of object
// as far as can be told before kinds are resolved.
func sameObjects(a, b *handler) bool {
	if a.Unstructured != b.Unstructured {
		return false
	}
	if a.Unstructured {
		return a.Options.GVK == b.Options.GVK && a.Options.Resource == b.Options.Resource && sameSelector(a.Options.Kinds, b.Options.Kinds)
	}
	if a.NewObject == nil || b.NewObject == nil {
		return a.NewObject == nil && b.NewObject == nil
	}
	return reflect.TypeOf(a.NewObject()) == reflect.TypeOf(b.NewObject())
}

// sameSelector reports whether two kind selectors may choose the same
// kinds: both absent, the same category, or both functions (which cannot
// be compared, so that their ids must differ).
func sameSelector(a, b *spec.KindSelector) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Category == b.Category
}

// literalName matches the runtime names of function literals: pkg.fn.func1,
// pkg.fn.func1.2, and pkg.fn.func1.helper.1 for a literal a helper returns.
var literalName = regexp.MustCompile(`\.(func\d+|\d+)(\.\d+)*$`)

// defaultID names a handler after its function, or after its kind for
// function literals (and then reports true): <kind>_fn, <kind>_fn_2, ...
// per kind and object kind. Field handlers add /<field>.
func defaultID(h *handler, fn any, earlier []*handler) (string, bool) {
	id, literal := funcName(fn)
	if literal {
		n := 1
		for _, other := range earlier {
			if other.DefaultedID && other.Kind == h.Kind && sameObjects(other, h) {
				n++
			}
		}
		id = h.Kind.String() + "_fn"
		if n > 1 {
			id = fmt.Sprintf("%s_%d", id, n)
		}
	}
	if h.Kind != spec.KindIndex && len(h.Options.Field) > 0 {
		id += "/" + strings.Join(h.Options.Field, ".")
	}
	return id, literal
}

// funcName returns the Go name of a named function, or reports that fn is
// a literal (or nil).
func funcName(fn any) (string, bool) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return "", true
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return "", true
	}
	name := strings.TrimSuffix(f.Name(), "-fm")
	if i, j := strings.Index(name, "["), strings.LastIndex(name, "]"); i >= 0 && j > i {
		name = name[:i] + name[j+1:] // a generic function: pkg.fn[...] or pkg.fn[...].func1
	}
	if literalName.MatchString(name) {
		return "", true
	}
	return name[strings.LastIndex(name, ".")+1:], false
}

// newObject returns a new, empty object of the pointer type T, or nil if T is
// not a pointer type.
func newObject[T client.Object]() client.Object {
	t := reflect.TypeOf((*T)(nil)).Elem()
	if t.Kind() != reflect.Pointer {
		return nil
	}
	obj, _ := reflect.New(t.Elem()).Interface().(client.Object)
	return obj
}

// callerSource returns file:line of the first caller outside gopf's own
// registration code, so that messages point at the user's registration.
func callerSource() string {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		internal := strings.HasPrefix(f.Function, "github.com/gopf-dev/gopf.") ||
			strings.HasPrefix(f.Function, "github.com/gopf-dev/gopf/handlers.")
		if !internal || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown place"
		}
	}
}
