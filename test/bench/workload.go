//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	labels  map[string]string // of the objects it creates
	workers int
}

// arrivalRate is how many objects per second arrive in the arrive phases
// of WorkloadFairness: few enough for every operator to keep up with when
// nothing else happens, so that the time to the first handler call shows
// waiting rather than a backlog.
const arrivalRate = 100

// objectNames returns the names of the objects of sc.
func (sc Scenario) objectNames() []string {
	if sc.Workload == WorkloadFairness {
		arrive, failing, late := fairnessNames(sc.Objects)
		return append(append(arrive, failing...), late...)
	}
	return namesWith("kex", sc.Objects)
}

// namesWith returns the names of n objects: prefix-00000 and on.
func namesWith(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}

// of returns a load generator for the named objects, which it creates with
// labels.
func (g *loadGenerator) of(names []string, labels map[string]string) *loadGenerator {
	o := *g
	o.names, o.labels = names, labels
	return &o
}

// initial returns the object named as the load generator creates it.
func (g *loadGenerator) initial(name string) client.Object {
	obj := g.kind.Initial(g.ns, name)
	obj.SetLabels(g.labels)
	return obj
}

// createAll creates every object with its watched field InitialField.
func (g *loadGenerator) createAll(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, name string) error {
		return g.c.Create(ctx, g.initial(name))
	})
}

// arrive creates the objects one after the other at perSecond, as they
// would arrive in a cluster, each in a goroutine of its own, and tells
// created when the API server answered each request.
func (g *loadGenerator) arrive(ctx context.Context, perSecond float64, created func(name string, at time.Time)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i, name := range g.names {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			if err := g.c.Create(ctx, g.initial(name)); err != nil {
				cancel(fmt.Errorf("%s/%s: %w", g.ns, name, err))
				return
			}
			created(name, time.Now())
		})
	}
	wg.Wait()
	return context.Cause(ctx)
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
