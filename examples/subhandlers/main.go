// Command subhandlers shows sub-handlers, as Kopf's 07-subhandlers does: the
// create handler of a KopfExample registers one sub-handler per item of
// spec.items with c.Register. Each sub-handler has its own id
// (create_items/<item>), its own progress and retries, and its own result in
// status.create_items/<item>. While any of them is unfinished, the parent is
// called again on later reconciles, so it registers the same sub-handlers
// every time and does nothing else that has side effects.
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update

func main() {
	gopf.Main(registry(), kopfv1.AddToScheme)
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		for _, item := range obj.Spec.Items {
			c.Register(item, func(ctx context.Context, sc *handlers.Cause) (any, error) {
				return handleItem(item, sc)
			})
		}
		return map[string]any{"items": len(obj.Spec.Items)}, nil
	}, handlers.ID("create_items"))
	return reg
}

// handleItem handles one item. Items named "slow-..." are not ready at the
// first attempt, to show that each sub-handler retries on its own.
func handleItem(item string, c *handlers.Cause) (any, error) {
	if strings.HasPrefix(item, "slow-") && c.Retry == 0 {
		return nil, handlers.Temporary(fmt.Errorf("%s is not ready yet", item), 500*time.Millisecond)
	}
	c.Log.Info("handled an item", "item", item, "retry", c.Retry)
	return map[string]any{"item": item, "attempts": c.Retry + 1}, nil
}
