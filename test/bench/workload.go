//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// loadGenerator sends the workload's requests, as the administrator, from a
// pool of workers.
type loadGenerator struct {
	c       client.Client // talks to the API server directly
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

// createAll creates every object with spec.field InitialField.
func (g *loadGenerator) createAll(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, name string) error {
		obj := &kopfv1.KopfExample{
			ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: name},
			Spec:       kopfv1.KopfExampleSpec{Field: scenario.InitialField, Duration: "1m", Items: []string{"item1", "item2"}},
		}
		return g.c.Create(ctx, obj)
	})
}

// updateAll sets spec.field of every object to UpdatedField.
func (g *loadGenerator) updateAll(ctx context.Context) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"`+scenario.UpdatedField+`"}}`))
	return g.each(ctx, func(ctx context.Context, name string) error {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: name}}
		return g.c.Patch(ctx, obj, patch)
	})
}

// deleteAll deletes every object; the operators' finalizers hold them until
// their delete handling is done.
func (g *loadGenerator) deleteAll(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, name string) error {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: name}}
		return g.c.Delete(ctx, obj)
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
