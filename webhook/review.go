package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// reviewer answers the admission requests of one path by running the
// handlers behind it: one handler on a handler's own path, every handler
// of a kind on the kind's path.
type reviewer struct {
	mutating bool
	hooks    []*hook // in registration order
}

var _ admission.Handler = (*reviewer)(nil)

// Handle runs every handler that is for the request's operation and
// subresource and whose filters select the object. Validators all run.
// Mutators run in order, each on the object as the ones before it left it;
// the response carries the difference from the original as a JSON patch.
// If any handler fails, the request is denied with the failure that ranks
// highest (see denial). Warnings of all handlers are returned either way.
func (rv *reviewer) Handle(ctx context.Context, req admission.Request) admission.Response {
	op := req.Operation
	original := req.Object.Raw
	if op == admissionv1.Delete {
		original = req.OldObject.Raw
	}
	current := original
	var warnings []string
	var failures []error
	memos := memosOf(&req.AdmissionRequest, original)
	for _, h := range rv.hooks {
		if !h.handles(op, req.SubResource) {
			continue
		}
		next, warns, err := rv.run(ctx, h, &req.AdmissionRequest, current, memos.get(h))
		warnings = append(warnings, warns...)
		if err != nil {
			failures = append(failures, err)
			continue
		}
		if next != nil {
			current = next
		}
	}
	if len(failures) > 0 {
		code, message := denial(failures)
		logf.FromContext(ctx).Info("admission denied", "code", code, "message", message, "handlers", len(failures))
		return deny(code, message).WithWarnings(warnings...)
	}
	if bytes.Equal(current, original) {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	return admission.PatchResponseFromRaw(original, current).WithWarnings(warnings...)
}

// run calls one handler on the object current (JSON). For a mutator on
// CREATE or UPDATE, it returns the object with the handler's changes, or
// nil when the handler changed nothing or was not called.
func (rv *reviewer) run(ctx context.Context, h *hook, req *admissionv1.AdmissionRequest, current []byte, memo *spec.Memo) ([]byte, []string, error) {
	op := req.Operation
	obj, old, err := decodeObjects(h, req, current)
	if err != nil {
		return nil, nil, err
	}
	if !h.selects(obj) || !fieldSelects(h.reg.Options, obj) {
		return nil, nil, nil
	}
	mutate := rv.mutating && (op == admissionv1.Create || op == admissionv1.Update)
	var before []byte
	if mutate {
		if before, err = json.Marshal(obj); err != nil {
			return nil, nil, fmt.Errorf("%s: encoding the object: %w", h.reg, err)
		}
	}
	hc := admissionCall(ctx, h, req, memo)
	if err := call(ctx, h, obj, old, hc); err != nil {
		return nil, hc.Warnings, err
	}
	if !mutate {
		return nil, hc.Warnings, nil
	}
	next, err := mutated(h, current, before, obj, hc.Patch)
	return next, hc.Warnings, err
}

// decodeObjects decodes the object current (JSON) and, on UPDATE and
// DELETE, the request's old object, as h's kind. On CONNECT the object is
// an empty one with the request's name and namespace.
func decodeObjects(h *hook, req *admissionv1.AdmissionRequest, current []byte) (obj, old client.Object, err error) {
	op := req.Operation
	// Objects decode as the API server decodes them, keys case-sensitively:
	// encoding/json would let a "Spec" or "dAtA" the API server ignores
	// decide what the handler sees.
	obj = h.reg.NewObject()
	if op == admissionv1.Connect {
		// The request's object is the options of the connection, of another
		// kind; the handler finds it in Admission.Raw.
		obj.SetName(req.Name)
		obj.SetNamespace(req.Namespace)
	} else if err := utiljson.Unmarshal(current, obj); err != nil {
		return nil, nil, fmt.Errorf("%s: decoding the object: %w", h.reg, err)
	}
	if (op == admissionv1.Update || op == admissionv1.Delete) && len(req.OldObject.Raw) > 0 {
		old = h.reg.NewObject()
		if err := utiljson.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, nil, fmt.Errorf("%s: decoding the old object: %w", h.reg, err)
		}
	}
	return obj, old, nil
}

// admissionCall is what handler h is given of req.
func admissionCall(ctx context.Context, h *hook, req *admissionv1.AdmissionRequest, memo *spec.Memo) *spec.AdmissionCall {
	hc := &spec.AdmissionCall{
		Raw:       req,
		HandlerID: h.reg.Options.ID,
		Param:     h.reg.Options.Param,
		Log:       logf.FromContext(ctx).WithValues("handler", h.reg.Options.ID),
		Patch:     &spec.Patch{},
		Memo:      memo,
		Client:    h.client,
	}
	if h.op != nil {
		hc.Indexes = h.op.Indexes
	}
	return hc
}

// mutated returns the object current (JSON) with the changes a mutator made:
// to obj, which was before (JSON) when it was called, and in patch. It
// returns nil when the mutator changed nothing.
func mutated(h *hook, current, before []byte, obj client.Object, patch *spec.Patch) ([]byte, error) {
	after, err := json.Marshal(obj)
	if err == nil {
		after, err = mergePatch(after, patch)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the changed object: %w", h.reg, err)
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	next, err := applyChanges(current, before, after)
	if err != nil {
		return nil, fmt.Errorf("%s: applying the changes: %w", h.reg, err)
	}
	return next, nil
}

// requestMemos finds the memos the handlers of one admission request get:
// per kind, the object's memo if the reconcile engine knows the object, as
// Kopf gives; else (always on CREATE, where Kopf gives a throw-away memo) a
// shallow copy of the operator memo that the object does not keep.
type requestMemos struct {
	key   types.NamespacedName
	uid   types.UID // "" on CONNECT: the object's, whatever it is
	fresh bool      // CREATE: no object yet
	byGVK map[schema.GroupVersionKind]*spec.Memo
}

// memosOf prepares the memos of a request whose object (the stored one on
// DELETE) is raw.
func memosOf(req *admissionv1.AdmissionRequest, raw []byte) *requestMemos {
	ms := &requestMemos{
		key:   types.NamespacedName{Namespace: req.Namespace, Name: req.Name},
		fresh: req.Operation == admissionv1.Create,
		byGVK: map[schema.GroupVersionKind]*spec.Memo{},
	}
	if req.Operation != admissionv1.Connect {
		var meta struct {
			Metadata struct {
				UID types.UID `json:"uid"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &meta) // an object without a uid has no memory
		ms.uid = meta.Metadata.UID
		ms.fresh = ms.fresh || ms.uid == ""
	}
	return ms
}

// get returns the memo for h's kind.
func (ms *requestMemos) get(h *hook) *spec.Memo {
	if m, ok := ms.byGVK[h.gvk]; ok {
		return m
	}
	var m *spec.Memo
	if h.op != nil && !ms.fresh {
		m = h.op.ObjectMemo(h.gvk, ms.key, ms.uid)
	}
	if m == nil {
		m = &spec.Memo{}
		if h.op != nil {
			spec.SeedMemo(m, h.op.Memo)
		}
	}
	ms.byGVK[h.gvk] = m
	return m
}

// call runs the handler, turning a panic into an error.
func call(ctx context.Context, h *hook, obj, old client.Object, hc *spec.AdmissionCall) error {
	err := spec.Protect(hc.Log, func() error { return h.reg.Review(ctx, obj, old, hc) })
	if p := (*spec.PanicError)(nil); errors.As(err, &p) {
		return fmt.Errorf("admission handler %q panicked: %v", h.reg.Options.ID, p.Value)
	}
	return err
}

// denial picks the failure that decides a denied request, ranked as Kopf
// ranks them: a Deny (AdmissionError) first, then a PermanentError, then a
// TemporaryError, then any other error, and among equals the earliest
// handler's. It returns the HTTP status code (the AdmissionError's, else
// 500) and the message.
func denial(failures []error) (int32, string) {
	best, bestRank := failures[0], errorRank(failures[0])
	for _, err := range failures[1:] {
		if r := errorRank(err); r < bestRank {
			best, bestRank = err, r
		}
	}
	var denied *spec.AdmissionError
	if errors.As(best, &denied) {
		return int32(denied.StatusCode()), best.Error()
	}
	message := best.Error()
	var permanent *handlers.PermanentError
	var temporary *handlers.TemporaryError
	switch {
	case errors.As(best, &permanent) && best == error(permanent):
		message = permanent.Err.Error()
	case errors.As(best, &temporary) && best == error(temporary):
		message = temporary.Err.Error()
	}
	return http.StatusInternalServerError, message
}

func errorRank(err error) int {
	var denied *spec.AdmissionError
	var permanent *handlers.PermanentError
	var temporary *handlers.TemporaryError
	switch {
	case errors.As(err, &denied):
		return 0
	case errors.As(err, &permanent):
		return 1
	case errors.As(err, &temporary):
		return 2
	}
	return 3
}

// deny makes a denying response.
func deny(code int32, message string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reasonFor(code),
			Message: message,
		},
	}}
}

// reasonFor gives the status reason clients check (apierrors.IsInvalid and
// friends) for a code, as the API server gives it.
func reasonFor(code int32) metav1.StatusReason {
	return apierrors.NewGenericServerResponse(int(code), "", schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason
}

// fieldSelects applies an admission handler's Field and Value filters to
// the request's object, as Kopf does: without Value, the field must be
// there; with Value, its value (or its absence) must match.
func fieldSelects(o spec.Options, obj client.Object) bool {
	if o.Field == nil {
		return true
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false
	}
	v, found, err := unstructured.NestedFieldNoCopy(raw, o.Field...)
	found = found && err == nil
	if o.Value == nil {
		return found
	}
	return o.Value.Match(v, found)
}
