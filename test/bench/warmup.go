//go:build linux

package bench

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// warmUpObjects is how many objects of each kind the warm-up creates.
const warmUpObjects = 50

// warmUp sends the workload's kinds of requests once on every kind of the
// scenarios, with no operator running, so that the API server's first-use
// costs (setting up a custom resource's storage and watch cache, for one)
// do not fall on whichever operator runs first.
func (b *bench) warmUp(ctx context.Context) error {
	const ns = "bench-warmup"
	if err := b.createNamespace(ctx, ns); err != nil {
		return err
	}
	warmed := map[string]bool{}
	scenarios := b.opts.Scenarios
	if b.opts.Sharded != nil {
		scenarios = append(slices.Clip(scenarios), Basic)
	}
	for _, sc := range scenarios {
		kind, err := sc.kind()
		if err != nil {
			return err
		}
		if warmed[kind.Name] {
			continue
		}
		warmed[kind.Name] = true
		load := &loadGenerator{c: b.c, kind: kind, ns: ns, names: namesWith("kex", warmUpObjects), workers: b.opts.Workers}
		status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"warm":{"message":"up"}}}`))
		annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"bench.gopf.dev/warm":"up"}}}`))
		steps := []func(context.Context) error{
			load.createAll,
			load.updateAll,
			func(ctx context.Context) error {
				return load.each(ctx, func(ctx context.Context, name string) error {
					if kind == scenario.KopfExample {
						return b.c.Status().Patch(ctx, kind.New(ns, name), status)
					}
					return b.c.Patch(ctx, kind.New(ns, name), annotate)
				})
			},
			load.deleteAll,
		}
		for _, step := range steps {
			if err := step(ctx); err != nil {
				return fmt.Errorf("warming up the API server on %s: %w", kind.Resource, err)
			}
		}
	}
	return nil
}
