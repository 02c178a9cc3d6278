package spec

import (
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AdmissionCall is what the webhook hands an admission handler for one
// request, and what the handler hands back besides its error: package
// handlers turns it into the handler's typed Admission.
type AdmissionCall struct {
	// Raw is the request as the API server sent it.
	Raw *admissionv1.AdmissionRequest
	// HandlerID and Param are the running handler's.
	HandlerID string
	Param     any
	// Log carries the object's identity and the handler id.
	Log logr.Logger
	// Patch collects the changes a mutating handler records.
	Patch *Patch
	// Memo is the memo the handler gets; see handlers.Admission.
	Memo *Memo
	// Indexes are the operator's indexes; nil without an operator.
	Indexes *Indexes
	// Client is the manager's client.
	Client client.Client

	// Warnings are the warnings the handler added, for the response.
	Warnings []string
}
