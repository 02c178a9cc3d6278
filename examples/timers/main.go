// Command timers runs handlers periodically for each KopfExample, as Kopf's
// 15-timers example does. A timer's result goes to status.<id>, and is
// written only when it differs from what status holds, so a timer that keeps
// finding the same thing costs nothing.
//
//   - count_items runs every interval, the interval counted from the end of
//     one run to the start of the next; its first run waits InitialDelay.
//   - check_health runs Sharp: on a fixed grid of the interval, however
//     long each run takes.
//   - settle runs with Idle (and no interval): once per quiet period, after
//     the object has not changed for that long.
//
// Timers need gopf's finalizer, so that they stop before their object goes.
package main

import (
	"context"
	"time"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/finalizers,verbs=update

func main() {
	gopf.Main(registry(10*time.Second), kopfv1.AddToScheme)
}

// registry registers the timers; interval is their period.
func registry(interval time.Duration) *handlers.Registry {
	reg := handlers.NewRegistry()

	handlers.OnTimer(reg, interval, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"items": len(obj.Spec.Items)}, nil
	}, handlers.ID("count_items"), handlers.InitialDelay(interval/2))

	handlers.OnTimer(reg, interval, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		healthy := obj.Spec.Field != "broken"
		c.Memo.Update("checks", func(old any) any { n, _ := old.(int); return n + 1 })
		c.Log.Info("health checked", "healthy", healthy, "checks", c.Memo.Get("checks"))
		return map[string]any{"healthy": healthy}, nil
	}, handlers.ID("check_health"), handlers.Sharp())

	handlers.OnTimer(reg, 0, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"field": obj.Spec.Field}, nil
	}, handlers.ID("settle"), handlers.Idle(interval))

	return reg
}
