package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/bench/internal/profiling"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

func main() {
	profiling.Start()
	reconciles.Start()
	n, err := scenario.Handlers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopfop:", err)
		os.Exit(2)
	}
	reg := handlers.NewRegistry()
	for i := range n {
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			return scenario.CreateResult(), nil
		}, handlers.ID(scenario.CreateKey(i, n)))
		handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			return scenario.UpdateResult(obj.Spec.Field), nil
		}, handlers.ID(scenario.UpdateKey(i, n)))
		handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			return nil, nil // nothing outside the cluster to clean up
		}, handlers.ID(scenario.DeleteID(i, n)))
	}
	gopf.Main(reg, kopfv1.AddToScheme)
}
