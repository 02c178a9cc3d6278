package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/profiling"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
	"github.com/gopf-dev/gopf/test/kinds"
)

func main() {
	profiling.Start()
	n, err := scenario.Handlers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopfop:", err)
		os.Exit(2)
	}
	kind, err := scenario.KindFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopfop:", err)
		os.Exit(2)
	}
	var interval, delay, work time.Duration
	periodic, err := scenario.Periodic()
	if err == nil {
		delay, err = scenario.RetryDelay()
	}
	if err == nil {
		work, err = scenario.Work()
	}
	if err == nil {
		interval, err = scenario.Interval()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopfop:", err)
		os.Exit(2)
	}
	reconciles.Start(kind.Name)
	reg := handlers.NewRegistry()
	switch {
	case periodic == scenario.PeriodicTimer:
		registerTimer(reg, interval)
	case periodic == scenario.PeriodicDaemon:
		registerDaemon(reg, interval)
	case kind == scenario.Widget:
		register[*kinds.Widget](reg, n, annotate, delay, work)
	case kind == scenario.Pod:
		register[*corev1.Pod](reg, n, annotate, delay, work)
	default:
		register[*kopfv1.KopfExample](reg, n, returnResult, delay, work)
	}
	gopf.Main(reg, kopfv1.AddToScheme, kinds.AddToScheme)
}

// recorder turns a handler's result into what it returns: the result
// itself, stored by gopf under status.<handler id>, or nothing, the result
// having gone to an annotation.
type recorder func(c *handlers.Cause, result string) any

// returnResult is for KopfExample, whose status keeps what gopf stores.
func returnResult(c *handlers.Cause, result string) any {
	if c.Reason == handlers.ReasonCreate {
		return scenario.CreateResult()
	}
	return scenario.UpdateResult(result)
}

// annotate is for kinds whose typed status cannot keep results: the
// handler patches its annotation, as a handler of such a kind would.
func annotate(c *handlers.Cause, result string) any {
	c.Patch.SetAnnotation(scenario.ResultAnnotation(c.HandlerID), &result)
	return nil
}

// register adds n create, update and delete handlers on T. On a failing
// object (scenario.Failing) the create handlers fail with a temporary
// error asking to be called again after delay.
func register[T client.Object](reg *handlers.Registry, n int, record recorder, delay, work time.Duration) {
	for i := range n {
		handlers.OnCreate(reg, func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
			calls.Record(string(handlers.ReasonCreate), c.Name)
			if err := busy(ctx, c.Name, work); err != nil {
				return nil, err
			}
			if scenario.Failing(obj) {
				return nil, handlers.Temporary(errors.New("failing on purpose"), delay)
			}
			return record(c, scenario.CreatedValue), nil
		}, handlers.ID(scenario.CreateKey(i, n)))
		handlers.OnUpdate(reg, func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
			calls.Record(string(handlers.ReasonUpdate), c.Name)
			if err := busy(ctx, c.Name, work); err != nil {
				return nil, err
			}
			return record(c, scenario.Field(obj)), nil
		}, handlers.ID(scenario.UpdateKey(i, n)))
		handlers.OnDelete(reg, func(ctx context.Context, obj T, c *handlers.Cause) (any, error) {
			calls.Record(string(handlers.ReasonDelete), c.Name)
			if err := busy(ctx, c.Name, work); err != nil {
				return nil, err
			}
			return nil, nil // nothing outside the cluster to clean up
		}, handlers.ID(scenario.DeleteID(i, n)))
	}
}

// busy takes d for a slow object (scenario.Slow), as a call out of the
// cluster would, or returns the context's error if it ends first.
func busy(ctx context.Context, name string, d time.Duration) error {
	if d <= 0 || !scenario.Slow(name) {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// registerTimer adds a timer on KopfExample whose result does not change,
// so that gopf stores it once and writes nothing after.
func registerTimer(reg *handlers.Registry, interval time.Duration) {
	handlers.OnTimer(reg, interval, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		defer calls.Run(scenario.CauseTimer, c.Name)()
		return scenario.Check(obj), nil
	}, handlers.ID(scenario.TimerKey))
}

// registerDaemon adds a daemon on KopfExample that does the timer's check
// every interval until it is stopped.
func registerDaemon(reg *handlers.Registry, interval time.Duration) {
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		for {
			end := calls.Run(scenario.CauseDaemon, c.Name)
			_ = scenario.Check(d.Object()) // unchanged: nothing to write
			end()
			if !d.Sleep(interval) {
				return nil
			}
		}
	}, handlers.ID(scenario.DaemonID))
}
