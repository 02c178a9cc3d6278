package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/profiling"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

func main() {
	profiling.Start()
	n, err := scenario.Handlers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopfop:", err)
		os.Exit(2)
	}
	reg := gopf.NewRegistry()
	for i := range n {
		gopf.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
			return scenario.CreateResult(), nil
		}, gopf.ID(scenario.CreateKey(i, n)))
		gopf.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
			return scenario.UpdateResult(obj.Spec.Field), nil
		}, gopf.ID(scenario.UpdateKey(i, n)))
		gopf.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *gopf.Cause) (any, error) {
			return nil, nil // nothing outside the cluster to clean up
		}, gopf.ID(scenario.DeleteID(i, n)))
	}
	gopf.Main(reg, kopfv1.AddToScheme)
}
