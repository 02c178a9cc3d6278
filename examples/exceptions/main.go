// Command exceptions shows how handlers fail, and how gopf retries them. Four
// create handlers of KopfExample:
//
//   - instant_failure returns handlers.Permanent: it is called once and its
//     failure recorded;
//   - eventual_failure returns a plain error: gopf retries it after its
//     Backoff until Retries (3 attempts in all) are used up, then records a
//     failure;
//   - panicking panics: a panic is an error like any other, here one that
//     fails at once (Errors(handlers.ErrorsPermanent));
//   - wait_for_config returns handlers.Temporary until the ConfigMap
//     <name>-config exists, then succeeds: the usual "a dependency is not
//     ready yet".
//
// While a handler is unfinished, its progress (attempts, next attempt,
// outcome, last message) is kept in status.gopf.progress, so that retries
// survive a restart of the operator. Once every handler has finished,
// succeeded or failed, the cause is complete and the progress goes away.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

func main() {
	gopf.Main(registry(newClient()), kopfv1.AddToScheme)
}

// newClient returns a client for the cluster gopf.Main runs against
// (KUBECONFIG or the in-cluster configuration), as gopf hands handlers no
// client of its own. Without a cluster it returns nil: gopf.Main then says
// what is missing, and -h and --print-rbac, which need no cluster, work.
func newClient() client.Client {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil
	}
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a client:", err)
		os.Exit(1)
	}
	return k8s
}

// errFlaky is the error eventual_failure keeps returning.
var errFlaky = errors.New("an error that was meant to pass, but does not")

// handlers registers the failing handlers; k8s reads the ConfigMap that
// wait_for_config waits for.
func registry(k8s client.Client) *handlers.Registry {
	reg := handlers.NewRegistry()

	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Permanent(errors.New("fail once and for all"))
	}, handlers.ID("instant_failure"))

	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Log.Info("failing again", "attempt", c.Retry+1)
		return nil, errFlaky
	}, handlers.ID("eventual_failure"), handlers.Retries(3), handlers.Backoff(time.Second))

	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		var items map[string]int
		items["boom"]++ // a nil map: this panics
		return nil, nil
	}, handlers.ID("panicking"), handlers.Errors(handlers.ErrorsPermanent))

	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		var cm corev1.ConfigMap
		err := k8s.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Name + "-config"}, &cm)
		if apierrors.IsNotFound(err) {
			return nil, handlers.Temporary(fmt.Errorf("ConfigMap %s-config does not exist yet", obj.Name), time.Second)
		}
		if err != nil {
			return nil, err // retried after the default backoff
		}
		return map[string]any{"retries": c.Retry, "config": cm.Data}, nil
	}, handlers.ID("wait_for_config"))

	return reg
}
