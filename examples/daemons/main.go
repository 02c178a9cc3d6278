// Command daemons runs a long-lived function per object, as Kopf's
// 14-daemons example does. For each KopfExample labelled
// daemons.example.gopf.dev/monitor=true, the monitor daemon wakes up every
// few seconds, looks at the newest version of its object and writes
// status.monitor when what it sees changed. It runs until it is asked to
// stop, and then says why, in status.monitor.stopped and in an Event:
//
//   - StopDeleted: the object is being deleted (gopf's finalizer keeps it
//     until the daemon has returned);
//   - StopFiltersMismatch: the label was removed;
//   - StopOperatorExiting: the operator shuts down.
//
// Its first attempt fails on purpose: a daemon that returns handlers.Temporary
// is started again after the delay; one that returns nil or a permanent
// error is not.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// monitorLabel selects the objects the daemon watches over.
const monitorLabel = "daemons.example.gopf.dev/monitor"

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func main() {
	gopf.Main(registry(5*time.Second), kopfv1.AddToScheme)
}

// handlers registers the monitor daemon, which looks at its object every
// period and writes status.monitor with c.Client, the manager's client.
func registry(period time.Duration) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		if c.Retry == 0 {
			return handlers.Temporary(errors.New("not ready on the first attempt"), time.Second)
		}
		seen := ""
		for {
			obj := d.Object() // the newest version the operator has seen
			if obj.Spec.Field != seen {
				seen = obj.Spec.Field
				patch := fmt.Sprintf(`{"status":{"monitor":{"field":%q,"attempt":%d}}}`, seen, c.Retry+1)
				if err := c.Client.Status().Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
					c.Log.Error(err, "cannot write the status")
				}
			}
			if !d.Sleep(period) { // false once the daemon is asked to stop
				break
			}
		}
		// ctx stays valid for CancellationBackoff after the stop request:
		// time enough to say goodbye.
		reason := d.StopReason()
		patch := fmt.Sprintf(`{"status":{"monitor":{"stopped":%q}}}`, reason)
		if err := c.Client.Status().Patch(ctx, d.Object(), client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			c.Log.Error(err, "cannot write the status")
		}
		c.Info("MonitorStopped", "the monitor stopped: %s", reason)
		return nil
	}, handlers.ID("monitor"), handlers.Labels{monitorLabel: "true"},
		handlers.CancellationBackoff(5*time.Second), handlers.CancellationTimeout(10*time.Second))
	return reg
}
