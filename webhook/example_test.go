package webhook_test

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

// Serving admission handlers on a manager of one's own: the webhook server
// is made first and given to the manager, then Setup registers the handlers
// and keeps the webhook configurations in the cluster while the manager
// runs. With zero Options this is dev mode (127.0.0.1, a self-signed CA);
// in a cluster, set Service.
func Example() {
	reg := handlers.NewRegistry()
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *handlers.Admission[*corev1.ConfigMap]) error {
		if _, ok := cm.Data["password"]; ok {
			return handlers.Deny(http.StatusBadRequest, "passwords belong in Secrets")
		}
		return nil
	})

	srv, err := webhook.NewServer(webhook.Options{Name: "my-operator.example.com"})
	if err != nil {
		panic(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{WebhookServer: srv})
	if err != nil {
		panic(err)
	}
	if err := webhook.Setup(mgr, reg); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
