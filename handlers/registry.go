package handlers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// HandlerFunc is a change handler for objects of type T. A non-nil result is
// merged into status.<handler id> of the object. A nil error means the
// handler is done for this cause.
type HandlerFunc[T client.Object] func(ctx context.Context, obj T, c *Cause) (any, error)

// Registration is one registered handler, with its options resolved. The
// engine reads registrations; users create them with OnCreate and friends.
type Registration struct {
	// Reason is the cause the handler runs for.
	Reason Reason
	// Options are the handler's options, with the ID defaulted.
	Options Options
	// Source is where the handler was registered (file:line), for messages.
	Source string
	// Unstructured is true for handlers of *unstructured.Unstructured.
	Unstructured bool
	// NewObject returns an empty object of the handler's type.
	NewObject func() client.Object
	// Call runs a change handler with an object made by NewObject.
	Call func(ctx context.Context, obj client.Object, c *Cause) (any, error)
	// Level is true for OnReconcile handlers, which run through Reconcile.
	Level bool
	// Reconcile runs a level handler with an object made by NewObject.
	Reconcile func(ctx context.Context, obj client.Object, c *Cause) (reconcile.Result, error)
	// RunDaemon runs a daemon (OnDaemon); timers (OnTimer) run through Call.
	RunDaemon func(ctx context.Context, ctl *DaemonControl) error

	literal bool // the function is a literal and the id was defaulted
}

// String names the handler for messages: its id, reason and where it was
// registered.
func (r *Registration) String() string {
	return fmt.Sprintf("handler %q (on %s, registered at %s)", r.Options.ID, r.kindName(), r.Source)
}

// HandlerKind names the handler kind: "create", "update", "delete",
// "resume", "field" (OnField), "reconcile" (OnReconcile), "timer",
// "daemon", "event" (OnEvent) or "index" (OnIndex).
func (r *Registration) HandlerKind() string { return r.kindName() }

func (r *Registration) kindName() string {
	switch {
	case r.Options.spawn == spawnTimer:
		return "timer"
	case r.Options.spawn == spawnDaemon:
		return "daemon"
	case r.Options.watch == watchEvent:
		return "event"
	case r.Options.watch == watchIndex:
		return "index"
	case r.Level:
		return "reconcile"
	case r.Options.fieldHandler:
		return "field"
	}
	return string(r.Reason)
}

// Registry collects handler registrations. The zero value is not usable;
// create one with NewRegistry. A Registry is safe for concurrent
// registration, but is meant to be filled before the operator starts.
type Registry struct {
	mu         sync.Mutex
	regs       []*Registration
	errs       []error
	admission  []*AdmissionRegistration // OnValidate and OnMutate, in order
	activities []*Activity              // OnStartup, OnCleanup and OnProbe, in order
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{} }

// Registrations returns the valid registrations in registration order.
func (r *Registry) Registrations() []*Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Registration(nil), r.regs...)
}

// Err reports every bad registration so far, joined, or nil. Each error
// names the handler and where it was registered.
func (r *Registry) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// ReconcileFunc is a level-based handler: it is called on every reconcile of
// every selected object, after the change handlers, like a plain
// controller-runtime Reconciler that receives the object.
type ReconcileFunc[T client.Object] func(ctx context.Context, obj T, c *Cause) (reconcile.Result, error)

// OnCreate registers fn to run once for each object of type T that gopf has
// not handled before: an object created while the operator runs, one created
// while it was down, or one that starts matching the handler's filters.
func OnCreate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	register(r, ReasonCreate, fn, nil, nil, opts)
}

// OnUpdate registers fn to run when an already-handled object's essence
// changes (its spec, labels, annotations or other non-status fields). With
// the Field option, only when that field changed.
func OnUpdate[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	register(r, ReasonUpdate, fn, nil, nil, opts)
}

// OnDelete registers fn to run when an object is being deleted. Unless the
// handler is Optional, gopf puts a finalizer on every selected object (before
// any create handler runs) and removes it once the delete handlers are done,
// so the handler runs before the object disappears.
func OnDelete[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	register(r, ReasonDelete, fn, nil, nil, opts)
}

// OnResume registers fn to run once per operator process for each
// already-handled object, on first sight: typically after a restart. It is
// not called for objects being deleted unless the Deleted option is given,
// and not for objects that get a create instead.
func OnResume[T client.Object](r *Registry, fn HandlerFunc[T], opts ...Option) {
	register(r, ReasonResume, fn, nil, nil, opts)
}

// OnField registers fn to run whenever the field at path (a dotted path such
// as "spec.replicas") differs between the last-handled and the current
// object: on creation with the field set, and on updates that change it. The
// handler receives the field's old and new values as Cause.Old and
// Cause.New. Value, OldValue and NewValue filter them.
func OnField[T client.Object](r *Registry, path string, fn HandlerFunc[T], opts ...Option) {
	register(r, ReasonUpdate, fn, nil, nil, append([]Option{Field(path), onField{}}, opts...))
}

// OnReconcile registers a level-based handler: fn runs on every reconcile
// of every selected object (including resyncs), after the change handlers,
// with the same Cause and Patch. Its Result and error are those of a
// controller-runtime Reconciler: they requeue the object.
func OnReconcile[T client.Object](r *Registry, fn ReconcileFunc[T], opts ...Option) {
	register[T](r, "", nil, fn, nil, opts)
}

// onField marks a registration made by OnField.
type onField struct{}

func (onField) ApplyToHandler(o *Options) { o.fieldHandler = true }

func register[T client.Object](r *Registry, reason Reason, fn HandlerFunc[T], level ReconcileFunc[T], daemon DaemonFunc[T], opts []Option) {
	reg := &Registration{Reason: reason, Source: callerSource()}
	for _, o := range opts {
		if o != nil {
			o.ApplyToHandler(&reg.Options)
		}
	}
	reg.Level = reason == "" && reg.Options.spawn == spawnNone && reg.Options.watch == watchNone
	var zero T
	_, reg.Unstructured = any(zero).(*unstructured.Unstructured)
	reg.NewObject = func() client.Object { return newObject[T]() }
	reg.Call = func(ctx context.Context, obj client.Object, c *Cause) (any, error) {
		typed, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("%s: got %T, want %T", reg, obj, zero)
		}
		return fn(ctx, typed, c)
	}
	if daemon != nil {
		reg.RunDaemon = func(ctx context.Context, ctl *DaemonControl) error {
			if _, ok := ctl.Latest().(T); !ok {
				return Permanent(fmt.Errorf("%s: got %T, want %T", reg, ctl.Latest(), zero))
			}
			return daemon(ctx, &Daemon[T]{Cause: ctl.Cause, ctl: ctl})
		}
	}
	if level != nil {
		reg.Reconcile = func(ctx context.Context, obj client.Object, c *Cause) (reconcile.Result, error) {
			typed, ok := obj.(T)
			if !ok {
				return reconcile.Result{}, fmt.Errorf("%s: got %T, want %T", reg, obj, zero)
			}
			return level(ctx, typed, c)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if reg.Options.ID == "" {
		var f any = fn
		switch {
		case reg.Level:
			f = level
		case reg.Options.spawn == spawnDaemon:
			f = daemon
		case reg.Options.named != nil:
			f = reg.Options.named
		}
		reg.Options.ID, reg.literal = r.defaultID(reg.kindName(), f, reg)
		if reg.Options.Field != "" {
			reg.Options.ID += "/" + reg.Options.Field
		}
	}
	nilFn := fn == nil && level == nil && daemon == nil
	if err := r.validate(reg, nilFn); err != nil {
		r.errs = append(r.errs, err)
		return
	}
	r.regs = append(r.regs, reg)
}

// validate checks one registration against itself and the ones before it.
func (r *Registry) validate(reg *Registration, nilFn bool) error {
	var problems []string
	if nilFn {
		problems = append(problems, "the handler function is nil")
	}
	if reg.NewObject() == nil {
		problems = append(problems, "the object type must be a non-nil pointer type such as *v1.Pod")
	}
	hasKind, hasResource := !reg.Options.Kind.Empty(), reg.Options.Resource != ""
	switch {
	case reg.Unstructured && !hasKind && !hasResource:
		problems = append(problems, "an unstructured handler needs ForKind or ForResource to say which objects it is for")
	case reg.Unstructured && hasKind && hasResource:
		problems = append(problems, "give ForKind or ForResource, not both")
	case !reg.Unstructured && (hasKind || hasResource):
		problems = append(problems, "ForKind and ForResource are only for unstructured handlers; a typed handler's kind comes from its Go type")
	}
	problems = append(problems, optionProblems(reg)...)
	if hasKind && (reg.Options.Kind.Version == "" || reg.Options.Kind.Kind == "") {
		problems = append(problems, fmt.Sprintf("kind %q needs a version and a kind", reg.Options.Kind))
	}
	for _, other := range r.regs {
		if other.Options.ID == reg.Options.ID && sameKind(other, reg) {
			problems = append(problems, fmt.Sprintf("id %q is already used by the handler registered at %s", reg.Options.ID, other.Source))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("bad registration of %s: %s", reg, strings.Join(problems, "; "))
}

// optionProblems checks the options against the handler kind.
func optionProblems(reg *Registration) []string {
	o := reg.Options
	problems := append([]string(nil), o.problems...)
	if o.Field != "" {
		if _, err := fieldPath(o.Field); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if o.fieldHandler && o.Field == "" {
		problems = append(problems, "OnField needs a field path")
	}
	if o.Field == "" && (o.Value != nil || o.Old != nil || o.New != nil) {
		problems = append(problems, "Value, OldValue and NewValue need a Field")
	}
	if o.Value != nil && (o.Old != nil || o.New != nil) {
		problems = append(problems, "give Value, or OldValue/NewValue, not both")
	}
	if (o.Old != nil || o.New != nil) && reg.Reason != ReasonUpdate {
		problems = append(problems, "OldValue and NewValue are only for update and field handlers")
	}
	if o.Optional && reg.Reason != ReasonDelete {
		problems = append(problems, "Optional is only for delete handlers")
	}
	if o.Deleted && reg.Reason != ReasonResume {
		problems = append(problems, "Deleted is only for resume handlers")
	}
	if o.Retries < 0 || o.Timeout < 0 || o.Backoff < 0 {
		problems = append(problems, "Retries, Timeout and Backoff cannot be negative")
	}
	if o.watch == watchIndex && o.ID == "" {
		problems = append(problems, "an index needs a name")
	}
	if reg.Options.spawn == spawnTimer && o.Interval <= 0 && o.Idle <= 0 {
		problems = append(problems, "a timer needs a positive interval or Idle")
	}
	if o.spawn != spawnTimer && (o.Interval != 0 || o.Idle != 0 || o.Sharp) {
		problems = append(problems, "Idle and Sharp are only for timers")
	}
	if o.spawn == spawnNone && (o.InitialDelay != 0 || o.InitialDelayFunc != nil) {
		problems = append(problems, "InitialDelay is only for timers and daemons")
	}
	if o.spawn != spawnDaemon && (o.CancellationBackoff != 0 || o.CancellationTimeout != 0) {
		problems = append(problems, "CancellationBackoff and CancellationTimeout are only for daemons")
	}
	if o.Interval < 0 || o.InitialDelay < 0 {
		problems = append(problems, "Interval and InitialDelay cannot be negative")
	}
	if o.Errors < ErrorsTemporary || o.Errors > ErrorsIgnored {
		problems = append(problems, fmt.Sprintf("unknown error mode %d", int(o.Errors)))
	}
	return problems
}

// sameKind reports whether two registrations are for the same kind of object
// as far as can be told before the kinds are resolved.
func sameKind(a, b *Registration) bool {
	if a.Unstructured != b.Unstructured {
		return false
	}
	if a.Unstructured {
		return a.Options.Kind == b.Options.Kind && a.Options.Resource == b.Options.Resource
	}
	return reflect.TypeOf(a.NewObject()) == reflect.TypeOf(b.NewObject())
}

var literalName = regexp.MustCompile(`\.func\d+(\.\d+)*$`)

// defaultID names a handler after its function, or after its reason for
// function literals (and then reports true); see Options.ID.
func (r *Registry) defaultID(kind string, fn any, reg *Registration) (string, bool) {
	if name, ok := funcName(fn); ok {
		return name, false
	}
	n := 1
	for _, other := range r.regs {
		if other.literal && other.kindName() == kind && sameKind(other, reg) {
			n++
		}
	}
	if n == 1 {
		return kind + "_fn", true
	}
	return fmt.Sprintf("%s_fn_%d", kind, n), true
}

// funcName returns the Go name of a named function (not a literal).
func funcName(fn any) (string, bool) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return "", false
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return "", false
	}
	name := strings.TrimSuffix(f.Name(), "-fm")
	if i, j := strings.Index(name, "["), strings.LastIndex(name, "]"); i >= 0 && j > i {
		name = name[:i] + name[j+1:] // a generic function: pkg.fn[...] or pkg.fn[...].func1
	}
	if literalName.MatchString(name) {
		return "", false
	}
	return name[strings.LastIndex(name, ".")+1:], true
}

func joinProblems(problems []string) string { return strings.Join(problems, "; ") }

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
