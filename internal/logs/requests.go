package logs

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Reconciles is the LogConstructor of a controller of kind: a reconcile's
// logger carries the object's kind, namespace and name, as the one
// controller-runtime's builder makes, but adds them (and the reconcile id
// the controller adds next) only when the reconcile writes a line. Most
// reconciles write none, and zap encodes values as soon as they are added:
// three copies of the logger per reconcile otherwise.
func Reconciles(base logr.Logger, kind string) func(*reconcile.Request) logr.Logger {
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return WithValuesLazily(base, kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}
}

// Admissions is the LogConstructor of gopf's admission webhooks: the values
// of controller-runtime's own (the object, the resource, the user and the
// request's id), added only when a line is written. controller-runtime asks
// for this logger twice per admission request, and gopf's webhooks rarely
// log, so the copies of the logger were a third of what a create
// allocated in the replica that serves the webhook.
func Admissions(base logr.Logger, req *admission.Request) logr.Logger {
	if req == nil {
		return base
	}
	return WithValuesLazily(base, "object", klog.KRef(req.Namespace, req.Name),
		"namespace", req.Namespace, "name", req.Name,
		"resource", req.Resource, "user", req.UserInfo.Username, "requestID", req.UID)
}
