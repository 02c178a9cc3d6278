package engine

import (
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spawn"
)

// The kind controller as the spawner of its timers and daemons sees it
// (spawn.Kind).

// NewSpawner makes the spawner of the kind's timers and daemons, running up
// to workers timers at once.
func (k *KindController) NewSpawner(workers int) *spawn.Spawner {
	return spawn.New(k, spawn.Options{Name: k.Name, Log: k.Log, Workers: workers, DefaultBackoff: k.opts.DefaultBackoff,
		Reader: k.reader, NewObject: k.NewObject})
}

// Cause is the cause of a timer's or daemon's call of r on obj.
func (k *KindController) Cause(r *contract.Handler, obj client.Object, log logr.Logger) *handlers.Cause {
	c, _ := k.BaseCall(r, obj, log)
	return c
}

// Open reports whether handlers may start: the operator is not paused.
func (k *KindController) Open() bool { return k.Shared.Gate.Open() }

// WhenPaused has f called each time the operator pauses, or stops.
func (k *KindController) WhenPaused(f func()) { k.Shared.Gate.WhenPaused(f) }

// Stopping reports whether the operator stops for good.
func (k *KindController) Stopping() bool { return k.Shared.Gate.Closed() }

// AddBusy counts running handlers (the operator's busy count, which
// Shared.Busy reports).
func (k *KindController) AddBusy(delta int64) { k.Shared.busy.Add(delta) }
