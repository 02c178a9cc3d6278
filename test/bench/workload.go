//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// loadGenerator sends the workload's requests, as the administrator, from a
// pool of workers.
type loadGenerator struct {
	c       client.Client // talks to the API server directly
	kind    scenario.Kind
	ns      string
	names   []string
	workers int
}

// objectNames returns the names of n objects.
func objectNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("kex-%05d", i)
	}
	return names
}

// createAll creates every object with its watched field InitialField.
func (g *loadGenerator) createAll(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, name string) error {
		return g.c.Create(ctx, g.kind.Initial(g.ns, name))
	})
}

// updateAll sets the watched field of every object to UpdatedField.
func (g *loadGenerator) updateAll(ctx context.Context) error {
	patch := g.kind.UpdatePatch()
	return g.each(ctx, func(ctx context.Context, name string) error {
		return g.c.Patch(ctx, g.kind.New(g.ns, name), patch)
	})
}

// deleteAll deletes every object; the operators' finalizers hold them until
// their delete handling is done.
func (g *loadGenerator) deleteAll(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, name string) error {
		return g.c.Delete(ctx, g.kind.New(g.ns, name))
	})
}

// each calls fn for every object name from g.workers goroutines; it stops
// at the first error and returns it.
func (g *loadGenerator) each(ctx context.Context, fn func(context.Context, string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	names := make(chan string)
	var wg sync.WaitGroup
	for range min(g.workers, len(g.names)) {
		wg.Go(func() {
			for name := range names {
				if err := fn(ctx, name); err != nil {
					cancel(fmt.Errorf("%s/%s: %w", g.ns, name, err))
				}
			}
		})
	}
feed:
	for _, name := range g.names {
		select {
		case names <- name:
		case <-ctx.Done():
			break feed
		}
	}
	close(names)
	wg.Wait()
	return context.Cause(ctx)
}
