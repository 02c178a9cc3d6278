package handlers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
)

// Sub-handlers run from inside the handler (Kopf's kopf.execute): one step
// per key of a ConfigMap, each with its own progress and retries. Until
// every step is done, Execute's error makes gopf call the handler again
// later, and the steps done already are skipped; once all are, the handler
// goes on with their results.
func ExampleCause_Execute() {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		var steps []handlers.SubHandler
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) { // the same order every time
			steps = append(steps, handlers.Sub(key, func(ctx context.Context, sc *handlers.Cause) (any, error) {
				return map[string]any{"size": len(cm.Data[key])}, nil // status.per_key/<key>
			}, handlers.Retries(5)))
		}
		if err := c.Execute(ctx, steps...); err != nil {
			return nil, err // unfinished: called again later; failed: fails too
		}
		total := 0.0
		for key := range cm.Data {
			if r, ok := c.Result(c.HandlerID + "/" + key); ok {
				total += r.(map[string]any)["size"].(float64)
			}
		}
		return map[string]any{"total": total}, nil
	}, handlers.ID("per_key"))
	fmt.Println(reg.Err())
	// Output: <nil>
}
