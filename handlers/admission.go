package handlers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
)

// Admission is what an admission handler receives besides the object: the
// request's details and the object as stored before the request, in the
// handler's Go type. It is valid for one call only.
type Admission[T client.Object] struct {
	// Operation is what the request does: admissionv1.Create, Update,
	// Delete or Connect (k8s.io/api/admission/v1). For DELETE the object
	// handed to the handler is the stored one (the same as Old).
	Operation admissionv1.Operation
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
	// Old is the stored object for UPDATE and DELETE requests, and nil for
	// CREATE and CONNECT.
	Old T

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

	// Memo is the object's memo, the one its other handlers share, when the
	// operator has handled the object (or seen it in an index) already. On
	// CREATE, and for objects the operator does not know, it is a shallow
	// copy of the operator memo that lasts for this request only, as in
	// Kopf. All handlers of one request share it.
	Memo *Memo
	// Indexes are the operator's indexes, read through the Index that
	// OnIndex or OnFlatIndex returns. Unlike object handlers, admission
	// handlers may be called before the indexes have seen their initial
	// lists.
	Indexes *Indexes
	// Client is the manager's client: reads come from its cache, writes go
	// to the API server.
	Client client.Client

	call *spec.AdmissionCall // the webhook's side: the warnings
}

// newAdmission gives the handler what the webhook's call holds, with the
// request's details taken from the request itself.
func newAdmission[T client.Object](call *spec.AdmissionCall) *Admission[T] {
	a := &Admission[T]{
		HandlerID: call.HandlerID, Param: call.Param, Log: call.Log, Raw: call.Raw,
		Patch: (*Patch)(call.Patch), Memo: (*Memo)(call.Memo), Indexes: (*Indexes)(call.Indexes), Client: call.Client,
		call: call,
	}
	if req := call.Raw; req != nil {
		a.Operation, a.SubResource, a.UserInfo = req.Operation, req.SubResource, req.UserInfo
		a.DryRun = req.DryRun != nil && *req.DryRun
		a.Name, a.Namespace = req.Name, req.Namespace
	}
	return a
}

// Warn adds a warning to the response. The API server passes warnings on to
// the client (kubectl prints them), whether the object is admitted or not.
func (a *Admission[T]) Warn(message string) {
	if a.call == nil {
		a.call = &spec.AdmissionCall{}
	}
	a.call.Warnings = append(a.call.Warnings, message)
}

// Deny returns an error that rejects an admission request with code (an
// HTTP status code, such as http.StatusBadRequest or 422; 0 means 403
// Forbidden) and message, the text the client sees. The error may be
// wrapped: gopf finds it in the chain.
func Deny(code int, message string) error {
	return &spec.AdmissionError{Code: code, Message: message}
}

// OnValidate registers fn to validate objects of type T as the API server
// admits them: fn decides whether a request may proceed and may add
// warnings, but its changes to the object are discarded. By default it is
// called for CREATE and UPDATE of the object itself; see Operations and
// SubResource. Several validating handlers of one kind all run; the API
// server rejects the request if any of them denies it.
//
// A nil error from fn admits the object. Deny rejects it with a code and a
// message; any other error rejects it with code 500 and the error's text,
// and so does a panic.
//
// Label filters are passed to the API server as the webhook's object
// selector where they can be expressed as one (exact values, Present,
// Absent), so that unselected objects cost no webhook call at all; function
// filters, annotation filters and When are applied by gopf.
func OnValidate[T client.Object](r *Registry, fn func(ctx context.Context, obj T, a *Admission[T]) error, opts ...AdmissionOption) {
	registerAdmission(r, spec.KindValidate, fn, opts)
}

// OnMutate registers fn to change objects of type T before the API server
// stores them, by changing the object it receives (or its Patch). By
// default it is called for CREATE and UPDATE of the object itself; a
// mutating handler is never called for DELETE unless Operations names it.
// Several mutating handlers of one kind run in registration order, each
// seeing the changes of those before it. fn changes obj in place, or
// records changes in a.Patch, or both; gopf sends the API server the
// difference as a JSON patch. Options and filters are as for
// OnValidate.
func OnMutate[T client.Object](r *Registry, fn func(ctx context.Context, obj T, a *Admission[T]) error, opts ...AdmissionOption) {
	registerAdmission(r, spec.KindMutate, fn, opts)
}

func registerAdmission[T client.Object](r *Registry, kind spec.Kind, fn func(ctx context.Context, obj T, a *Admission[T]) error, opts []AdmissionOption) {
	d := apply(opts)
	if d.Operations == nil {
		d.Operations = []string{string(admissionv1.Create), string(admissionv1.Update)}
	}
	d.problems = append(d.problems, admissionProblems(d.Options)...)
	h := newHandler[T](kind, d)
	if fn != nil {
		h.Review = func(ctx context.Context, obj, old client.Object, call *spec.AdmissionCall) error {
			typed, err := as[T](h, obj)
			if err != nil {
				return err
			}
			a := newAdmission[T](call)
			if old != nil {
				if a.Old, err = as[T](h, old); err != nil {
					return fmt.Errorf("the old object: %w", err)
				}
			}
			return fn(ctx, typed, a)
		}
	}
	r.add(h, fn, fn == nil, d.problems)
}

// admissionProblems checks the admission options.
func admissionProblems(o spec.Options) []string {
	var problems []string
	if len(o.Operations) == 0 {
		problems = append(problems, "Operations needs at least one operation")
	}
	for _, op := range o.Operations {
		switch admissionv1.Operation(op) {
		case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		default:
			problems = append(problems, fmt.Sprintf("unknown operation %q (want CREATE, UPDATE, DELETE or CONNECT)", op))
		}
	}
	if sub := o.SubResource; sub != "" && sub != "*" && len(validation.IsDNS1123Label(sub)) > 0 {
		problems = append(problems, fmt.Sprintf("subresource %q is not a subresource name or \"*\"", sub))
	}
	if t := o.WebhookTimeout; t != 0 && (t < time.Second || t > 30*time.Second || t%time.Second != 0) {
		problems = append(problems, fmt.Sprintf("WebhookTimeout %s is not a whole number of seconds between 1 and 30", t))
	}
	return problems
}

// admissionSetting is an option only OnValidate and OnMutate take.
type admissionSetting struct {
	setting
	forAdmission
}

// Operations sets the operations an admission handler is called for,
// Kubernetes' own admissionv1.Operation values (k8s.io/api/admission/v1),
// e.g. Operations(admissionv1.Create, admissionv1.Update,
// admissionv1.Delete). Default: CREATE and UPDATE.
//
// Only OnValidate and OnMutate take it.
func Operations(ops ...admissionv1.Operation) admissionSetting {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return admissionSetting{setting: set(func(d *draft) { d.Operations = names })}
}

// SubResource sets the subresource an admission handler is for: a name
// such as "status" or "scale", or "*" for the object and all its
// subresources. Default: the object itself. The object of a subresource
// request other than status is usually of another kind (Scale for "scale");
// register such handlers for *unstructured.Unstructured.
//
// Only OnValidate and OnMutate take it.
func SubResource(name string) admissionSetting {
	if name == "" {
		return admissionSetting{setting: rejected(`SubResource("") is not a subresource; leave the option out for the object itself`)}
	}
	return admissionSetting{setting: set(func(d *draft) { d.SubResource = name })}
}

// Persistent keeps the handler's webhook in the cluster's webhook
// configuration after the operator stops. By default gopf removes it on a
// clean shutdown, so that requests are not sent to an operator that is
// gone.
//
// Only OnValidate and OnMutate take it.
func Persistent() admissionSetting {
	return admissionSetting{setting: set(func(d *draft) { d.Persistent = true })}
}

// SideEffects declares that the handler has effects outside the object it
// is given and skips them when Admission.DryRun is set (sideEffects:
// NoneOnDryRun). Default: no side effects (None).
//
// Only OnValidate and OnMutate take it.
func SideEffects() admissionSetting {
	return admissionSetting{setting: set(func(d *draft) { d.SideEffects = true })}
}

// IgnoreFailures lets the API server admit the object when the webhook
// cannot be reached or fails to answer (failurePolicy: Ignore). A denial is
// still a denial. Default: such requests fail.
//
// Only OnValidate and OnMutate take it.
func IgnoreFailures() admissionSetting {
	return admissionSetting{setting: set(func(d *draft) { d.IgnoreFailures = true })}
}

// WebhookTimeout sets how long the API server waits for an admission
// handler's webhook: between 1 and 30 seconds, in whole seconds. Default:
// 10 seconds, the API server's own default.
//
// Only OnValidate and OnMutate take it.
func WebhookTimeout(t time.Duration) admissionSetting {
	return admissionSetting{setting: set(func(d *draft) { d.WebhookTimeout = t })}
}
