package handlers

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Operation is what an admission request asks the API server to do with an
// object. The values are those of the AdmissionReview API.
type Operation string

// The operations an admission handler can be called for.
const (
	OperationCreate  Operation = "CREATE"
	OperationUpdate  Operation = "UPDATE"
	OperationDelete  Operation = "DELETE"
	OperationConnect Operation = "CONNECT"
)

// AdmissionFunc is an admission handler for objects of type T: a validating
// one (OnValidate) or a mutating one (OnMutate).
//
// A nil error admits the object. Deny rejects it with a code and a message;
// any other error rejects it with code 500 and the error's text, and so does
// a panic. A mutating handler changes obj in place, or records changes in
// a.Patch, or both; gopf sends the API server the difference as a JSON patch.
type AdmissionFunc[T client.Object] func(ctx context.Context, obj T, a *Admission[T]) error

// Admission is what an admission handler receives besides the object: the
// request's details (through the embedded AdmissionRequest) and the object
// as stored before the request, in the handler's Go type.
type Admission[T client.Object] struct {
	*AdmissionRequest

	// Old is the stored object for UPDATE and DELETE requests, and nil for
	// CREATE and CONNECT.
	Old T
}

// AdmissionRequest holds the details of an admission request that do not
// depend on the handler's Go type. It is valid for one call only.
type AdmissionRequest struct {
	// Operation is what the request does. For DELETE the object handed to
	// the handler is the stored one (the same as Old).
	Operation Operation
	// SubResource is the subresource the request is for ("status",
	// "scale", ...), or "" for the object itself.
	SubResource string
	// DryRun is true when the API server will not store the outcome. A
	// handler with side effects outside the object (see SideEffects) must
	// skip them.
	DryRun bool
	// UserInfo is who sent the request.
	UserInfo authenticationv1.UserInfo
	// Name and Namespace identify the object. Name is empty on CREATE when
	// the object asks for a generated name.
	Name      string
	Namespace string

	// HandlerID is the id of the running handler.
	HandlerID string
	// Param is the value given with the WithParam option at registration.
	Param any
	// Log carries the object's identity and the handler id.
	Log logr.Logger

	// Patch collects changes a mutating handler wants made to the object,
	// as an alternative to changing the object in place. Validating
	// handlers' patches are ignored.
	Patch *Patch

	// Raw is the request as the API server sent it, for anything the fields
	// above leave out (such as the options object of a CONNECT request).
	Raw *admissionv1.AdmissionRequest

	warnings []string
}

// Warn adds a warning to the response. The API server passes warnings on to
// the client (kubectl prints them), whether the object is admitted or not.
func (a *AdmissionRequest) Warn(message string) {
	a.warnings = append(a.warnings, message)
}

// Warnings returns the warnings added so far with Warn.
func (a *AdmissionRequest) Warnings() []string { return a.warnings }

// AdmissionError denies an admission request with an HTTP-style status code
// and a message the client sees. Make one with Deny.
type AdmissionError struct {
	// Code is the HTTP status code of the denial, such as 400 or 422. Zero
	// means 403 Forbidden.
	Code int
	// Message says why the object is not admitted.
	Message string
}

// Deny returns an error that rejects an admission request with code (an
// HTTP status code, such as http.StatusBadRequest) and message.
func Deny(code int, message string) error {
	return &AdmissionError{Code: code, Message: message}
}

// Error returns the message.
func (e *AdmissionError) Error() string { return e.Message }

// StatusCode returns Code, or 403 when Code is zero.
func (e *AdmissionError) StatusCode() int {
	if e.Code == 0 {
		return http.StatusForbidden
	}
	return e.Code
}

// OnValidate registers fn to validate objects of type T as the API server
// admits them: fn decides whether a request may proceed and may add
// warnings, but its changes to the object are discarded. By default it is
// called for CREATE and UPDATE of the object itself; see Operations and
// SubResource. Several validating handlers of one kind all run; the API
// server rejects the request if any of them denies it.
//
// Label filters are passed to the API server as the webhook's object
// selector where they can be expressed as one (exact values, Present,
// Absent), so that unselected objects cost no webhook call at all; function
// filters, annotation filters and When are applied by gopf.
func OnValidate[T client.Object](r *Registry, fn AdmissionFunc[T], opts ...Option) {
	registerAdmission(r, false, fn, opts)
}

// OnMutate registers fn to change objects of type T before the API server
// stores them, by changing the object it receives (or its Patch). By
// default it is called for CREATE and UPDATE of the object itself; a
// mutating handler is never called for DELETE unless Operations names it.
// Several mutating handlers of one kind run in registration order, each
// seeing the changes of those before it. Options and filters are as for
// OnValidate.
func OnMutate[T client.Object](r *Registry, fn AdmissionFunc[T], opts ...Option) {
	registerAdmission(r, true, fn, opts)
}

// AdmissionRegistration is one registered admission handler, with its
// options resolved. The webhook package reads them; users create them with
// OnValidate and OnMutate.
type AdmissionRegistration struct {
	// Mutating is true for OnMutate handlers, false for OnValidate ones.
	Mutating bool
	// Options are the handler's common options (ID, Param, Kind or
	// Resource, Labels, Annotations, When), with the ID defaulted.
	Options Options
	// Admission are the admission options, with Operations defaulted.
	Admission AdmissionOptions
	// Source is where the handler was registered (file:line), for messages.
	Source string
	// Unstructured is true for handlers of *unstructured.Unstructured.
	Unstructured bool
	// NewObject returns an empty object of the handler's type.
	NewObject func() client.Object
	// Call runs the handler with obj and old made by NewObject (old may be
	// nil).
	Call func(ctx context.Context, obj, old client.Object, req *AdmissionRequest) error

	literal bool // the function is a literal and the id was defaulted
}

// String names the handler for messages: its id, kind and where it was
// registered.
func (r *AdmissionRegistration) String() string {
	return fmt.Sprintf("handler %q (on %s, registered at %s)", r.Options.ID, r.HandlerKind(), r.Source)
}

// HandlerKind is "validate" or "mutate".
func (r *AdmissionRegistration) HandlerKind() string {
	if r.Mutating {
		return "mutate"
	}
	return "validate"
}

// Handles reports whether the handler is for requests with this operation
// and subresource ("" for the object itself).
func (r *AdmissionRegistration) Handles(op Operation, subResource string) bool {
	if !containsOp(r.Admission.Operations, op) {
		return false
	}
	return r.Admission.SubResource == "*" || r.Admission.SubResource == subResource
}

// Selects reports whether the handler's label and annotation filters and
// its When predicate accept obj (given in the handler's Go type).
func (r *AdmissionRegistration) Selects(obj client.Object) bool {
	if !matchMetadata(r.Options.Labels, obj.GetLabels()) || !matchMetadata(r.Options.Annotations, obj.GetAnnotations()) {
		return false
	}
	return r.Options.When == nil || r.Options.When(obj)
}

// ObjectSelector returns the part of the handler's label filters that the
// API server can apply itself, as a label selector: an exact value becomes
// "In", Present "Exists" and Absent "DoesNotExist". Function filters, and
// values that are not valid label values, are left to Selects. It returns
// nil when there is nothing to select on, which selects every object.
func (r *AdmissionRegistration) ObjectSelector() *metav1.LabelSelector {
	var reqs []metav1.LabelSelectorRequirement
	for key, f := range r.Options.Labels {
		if len(validation.IsQualifiedName(key)) > 0 {
			continue
		}
		req := metav1.LabelSelectorRequirement{Key: key}
		switch f.kind {
		case filterEqual:
			s, ok := f.value.(string)
			if !ok || len(validation.IsValidLabelValue(s)) > 0 {
				continue
			}
			req.Operator, req.Values = metav1.LabelSelectorOpIn, []string{s}
		case filterPresent:
			req.Operator = metav1.LabelSelectorOpExists
		case filterAbsent:
			req.Operator = metav1.LabelSelectorOpDoesNotExist
		default:
			continue
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Key < reqs[j].Key })
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

// AdmissionOptions are the settings only admission handlers have. Like
// Options, it is an Option itself, and so is each helper below (Operations,
// SubResource, Persistent, SideEffects, IgnoreFailures, WebhookTimeout).
// Given to any other kind of handler, they make a bad registration.
type AdmissionOptions struct {
	// Operations are the operations the handler is called for. Default:
	// CREATE and UPDATE.
	Operations []Operation
	// SubResource is the subresource the handler is for: "" for the object
	// itself (the default), a name such as "status" or "scale", or "*" for
	// the object and all its subresources. The object of a subresource
	// request other than status is usually of another kind (Scale for
	// "scale"); register such handlers for *unstructured.Unstructured.
	SubResource string
	// Persistent keeps the handler's webhook in the cluster's webhook
	// configuration after the operator stops. By default gopf removes it
	// on a clean shutdown, so that requests are not sent to an operator
	// that is gone.
	Persistent bool
	// SideEffects declares that the handler has effects outside the object
	// it is given and skips them when AdmissionRequest.DryRun is set
	// (sideEffects: NoneOnDryRun). Default: no side effects (None).
	SideEffects bool
	// IgnoreFailures lets the API server admit the object when the webhook
	// cannot be reached or fails to answer (failurePolicy: Ignore). A
	// denial is still a denial. Default: such requests fail.
	IgnoreFailures bool
	// Timeout is how long the API server waits for the webhook, between
	// 1 and 30 seconds. Default: 10 seconds, the API server's own default.
	Timeout time.Duration

	problems []string
}

// ApplyToHandler implements Option: admission options make any handler
// other than an admission handler a bad registration.
func (o AdmissionOptions) ApplyToHandler(target *Options) {
	target.problems = append(target.problems, "Operations, SubResource, Persistent, SideEffects, IgnoreFailures and WebhookTimeout are only for OnValidate and OnMutate")
}

// applyToAdmission copies the non-zero settings of o into target.
func (o AdmissionOptions) applyToAdmission(target *AdmissionOptions) {
	if o.Operations != nil {
		target.Operations = append([]Operation{}, o.Operations...)
	}
	if o.SubResource != "" {
		target.SubResource = o.SubResource
	}
	target.Persistent = target.Persistent || o.Persistent
	target.SideEffects = target.SideEffects || o.SideEffects
	target.IgnoreFailures = target.IgnoreFailures || o.IgnoreFailures
	if o.Timeout != 0 {
		target.Timeout = o.Timeout
	}
	target.problems = append(target.problems, o.problems...)
}

// admissionOption is implemented by the options that apply to admission
// handlers in their own way.
type admissionOption interface {
	applyToAdmission(*AdmissionOptions)
}

// Operations sets the operations an admission handler is called for, e.g.
// Operations(OperationCreate, OperationUpdate, OperationDelete).
func Operations(ops ...Operation) Option {
	return AdmissionOptions{Operations: append([]Operation{}, ops...)}
}

// SubResource sets the subresource an admission handler is for; see
// AdmissionOptions.SubResource.
func SubResource(name string) Option {
	o := AdmissionOptions{SubResource: name}
	if name == "" {
		o.problems = append(o.problems, `SubResource("") is not a subresource; leave the option out for the object itself`)
	}
	return o
}

// Persistent keeps an admission handler's webhook configured after the
// operator stops; see AdmissionOptions.Persistent.
func Persistent() Option { return AdmissionOptions{Persistent: true} }

// SideEffects declares that an admission handler has side effects and skips
// them on dry runs; see AdmissionOptions.SideEffects.
func SideEffects() Option { return AdmissionOptions{SideEffects: true} }

// IgnoreFailures lets the API server admit objects when the handler's
// webhook cannot be reached; see AdmissionOptions.IgnoreFailures.
func IgnoreFailures() Option { return AdmissionOptions{IgnoreFailures: true} }

// WebhookTimeout sets how long the API server waits for an admission
// handler's webhook: between 1 and 30 seconds, in whole seconds.
func WebhookTimeout(d time.Duration) Option { return AdmissionOptions{Timeout: d} }

// AdmissionRegistrations returns the valid OnValidate and OnMutate
// registrations in registration order.
func (r *Registry) AdmissionRegistrations() []*AdmissionRegistration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*AdmissionRegistration(nil), r.admission...)
}

func registerAdmission[T client.Object](r *Registry, mutating bool, fn AdmissionFunc[T], opts []Option) {
	reg := &AdmissionRegistration{Mutating: mutating, Source: callerSource()}
	for _, o := range opts {
		switch o := o.(type) {
		case nil:
		case admissionOption:
			o.applyToAdmission(&reg.Admission)
		default:
			o.ApplyToHandler(&reg.Options)
		}
	}
	if reg.Admission.Operations == nil {
		reg.Admission.Operations = []Operation{OperationCreate, OperationUpdate}
	}
	var zero T
	_, reg.Unstructured = any(zero).(*unstructured.Unstructured)
	reg.NewObject = func() client.Object { return newObject[T]() }
	reg.Call = func(ctx context.Context, obj, old client.Object, req *AdmissionRequest) error {
		typed, ok := obj.(T)
		if !ok {
			return fmt.Errorf("%s: got %T, want %T", reg, obj, zero)
		}
		a := &Admission[T]{AdmissionRequest: req}
		if old != nil {
			if a.Old, ok = old.(T); !ok {
				return fmt.Errorf("%s: got %T as the old object, want %T", reg, old, zero)
			}
		}
		return fn(ctx, typed, a)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if reg.Options.ID == "" {
		reg.Options.ID, reg.literal = r.defaultAdmissionID(fn, reg)
	}
	if err := r.validateAdmission(reg, fn == nil); err != nil {
		r.errs = append(r.errs, err)
		return
	}
	r.admission = append(r.admission, reg)
}

// defaultAdmissionID names an admission handler after its function, or
// "validate_fn"/"mutate_fn" (then _2, _3, ... per kind) for literals.
func (r *Registry) defaultAdmissionID(fn any, reg *AdmissionRegistration) (string, bool) {
	if v := reflect.ValueOf(fn); v.Kind() == reflect.Func && !v.IsNil() {
		if f := runtime.FuncForPC(v.Pointer()); f != nil {
			name := strings.TrimSuffix(f.Name(), "-fm")
			if !literalName.MatchString(name) {
				return name[strings.LastIndex(name, ".")+1:], false
			}
		}
	}
	n := 1
	for _, other := range r.admission {
		if other.literal && other.Mutating == reg.Mutating && sameAdmissionKind(other, reg) {
			n++
		}
	}
	base := reg.HandlerKind() + "_fn"
	if n == 1 {
		return base, true
	}
	return fmt.Sprintf("%s_%d", base, n), true
}

// validateAdmission checks one admission registration against itself and
// the ones before it.
func (r *Registry) validateAdmission(reg *AdmissionRegistration, nilFn bool) error {
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
	if hasKind && (reg.Options.Kind.Version == "" || reg.Options.Kind.Kind == "") {
		problems = append(problems, fmt.Sprintf("kind %q needs a version and a kind", reg.Options.Kind))
	}
	problems = append(problems, reg.Options.problems...)
	problems = append(problems, admissionProblems(reg.Admission)...)
	if names := inapplicableOptions(reg.Options); len(names) > 0 {
		problems = append(problems, fmt.Sprintf("%s not for admission handlers", strings.Join(names, ", ")))
	}
	for _, other := range r.admission {
		if other.Options.ID == reg.Options.ID && other.Mutating == reg.Mutating && sameAdmissionKind(other, reg) {
			problems = append(problems, fmt.Sprintf("id %q is already used by the handler registered at %s", reg.Options.ID, other.Source))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("bad registration of %s: %s", reg, strings.Join(problems, "; "))
}

// admissionProblems checks the admission options.
func admissionProblems(o AdmissionOptions) []string {
	problems := append([]string(nil), o.problems...)
	if len(o.Operations) == 0 {
		problems = append(problems, "Operations needs at least one operation")
	}
	for _, op := range o.Operations {
		switch op {
		case OperationCreate, OperationUpdate, OperationDelete, OperationConnect:
		default:
			problems = append(problems, fmt.Sprintf("unknown operation %q (want CREATE, UPDATE, DELETE or CONNECT)", op))
		}
	}
	if sub := o.SubResource; sub != "" && sub != "*" && len(validation.IsDNS1123Label(sub)) > 0 {
		problems = append(problems, fmt.Sprintf("subresource %q is not a subresource name or \"*\"", sub))
	}
	if t := o.Timeout; t != 0 && (t < time.Second || t > 30*time.Second || t%time.Second != 0) {
		problems = append(problems, fmt.Sprintf("WebhookTimeout %s is not a whole number of seconds between 1 and 30", t))
	}
	return problems
}

// inapplicableOptions names the options set in o that admission handlers
// do not have (Field, Retries, ...): everything but the selection of
// objects, the id and the param.
func inapplicableOptions(o Options) []string {
	o.ID, o.Param, o.Kind, o.Resource = "", nil, schema.GroupVersionKind{}, ""
	o.Labels, o.Annotations, o.When, o.problems = nil, nil, nil, nil
	var names []string
	other := false
	v, t := reflect.ValueOf(o), reflect.TypeOf(o)
	for i := 0; i < t.NumField(); i++ {
		switch {
		case v.Field(i).IsZero():
		case t.Field(i).IsExported():
			names = append(names, t.Field(i).Name)
		default:
			other = true
		}
	}
	if other && len(names) == 0 {
		names = append(names, "options of another handler kind")
	}
	switch {
	case len(names) == 1 && !other:
		names[0] += " is"
	case len(names) > 0:
		names[len(names)-1] += " are"
	}
	return names
}

// sameAdmissionKind reports whether two admission registrations are for
// the same kind of object as far as can be told before kinds are resolved.
func sameAdmissionKind(a, b *AdmissionRegistration) bool {
	if a.Unstructured != b.Unstructured {
		return false
	}
	if a.Unstructured {
		return a.Options.Kind == b.Options.Kind && a.Options.Resource == b.Options.Resource
	}
	return reflect.TypeOf(a.NewObject()) == reflect.TypeOf(b.NewObject())
}

func matchMetadata(filters map[string]Filter, values map[string]string) bool {
	for key, f := range filters {
		v, ok := values[key]
		if !f.Match(v, ok) {
			return false
		}
	}
	return true
}

func containsOp(ops []Operation, op Operation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}
