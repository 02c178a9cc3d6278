// Command admission shows gopf's admission handlers on KopfExample: a
// validating handler that rejects a forbidden value of spec.field and warns
// about long item lists, and a mutating handler that fills in a default
// spec.duration and records who created the object.
//
// Run against a local control plane with `make run OPERATOR=./examples/admission`:
// the operator serves its webhooks on 127.0.0.1 with a self-signed CA and
// registers them with the API server itself. See README.md.
package main

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// kex is what an admission handler of KopfExamples receives besides the object.
type kex = handlers.Admission[*kopfv1.KopfExample]

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()

	// Validation: runs on CREATE and UPDATE; a denial's message and code
	// reach kubectl as they are.
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kex) error {
		if obj.Spec.Field == "forbidden" {
			return handlers.Deny(http.StatusUnprocessableEntity, `spec.field must not be "forbidden"`)
		}
		if len(obj.Spec.Items) > 3 {
			a.Warn("more than 3 items: only the first 3 are processed")
		}
		return nil
	}, handlers.ID("check-field"))

	// Mutation: change the object; gopf sends the API server the difference.
	handlers.OnMutate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *kex) error {
		if obj.Spec.Duration == "" {
			obj.Spec.Duration = "1m"
		}
		if a.Operation == admissionv1.Create && !a.DryRun {
			user := a.UserInfo.Username
			a.Patch.SetAnnotation("kopf.dev/created-by", &user)
		}
		return nil
	}, handlers.ID("defaults"))

	return reg
}
