package spawn

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// What the spawner holds per object, as the periodic benchmark's peak RSS
// sees it at 10,000 objects: go test -run '^$' -bench Memory ./internal/spawn/
// reports the heap (and for daemons the stack) each one keeps, after a
// garbage collection. The kind's Cause is empty here; the engine's adds
// about 650 bytes per daemon.

const memoryObjects = 2000

func BenchmarkMemoryPerDaemon(b *testing.B) {
	reg := handlers.NewRegistry()
	var sleeping atomic.Int64
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*corev1.ConfigMap], c *handlers.Cause) error {
		_ = d.Object()
		sleeping.Add(1)
		d.Sleep(time.Hour)
		sleeping.Add(-1)
		return nil
	}, handlers.ID("d"))
	daemons := contract.SetOf(reg).Handlers(spec.KindDaemon)
	objs := memoryObjectsOf()
	for range b.N {
		k := &kind{}
		s := New(k, configMaps(logr.Discard(), objs...))
		before := memoryInUse()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Start(ctx) }()
		for _, o := range objs {
			s.Sync(client.ObjectKeyFromObject(o), o, "{}", daemons)
		}
		waitUntil(func() bool { return sleeping.Load() == memoryObjects })
		after := memoryInUse()
		b.ReportMetric(float64(after.heap-before.heap)/memoryObjects, "heap-B/daemon")
		b.ReportMetric(float64(after.stack-before.stack)/memoryObjects, "stack-B/daemon")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		waitUntil(func() bool { return k.busy.Load() == 0 })
	}
}

func BenchmarkMemoryPerTimer(b *testing.B) {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("t"), handlers.InitialDelay(time.Hour)) // waiting, as timers do most of the time
	timers := contract.SetOf(reg).Handlers(spec.KindTimer)
	objs := memoryObjectsOf()
	for range b.N {
		s := New(&kind{}, configMaps(logr.Discard(), objs...))
		before := memoryInUse()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Start(ctx) }()
		for _, o := range objs {
			s.Sync(client.ObjectKeyFromObject(o), o, "{}", timers)
		}
		after := memoryInUse()
		b.ReportMetric(float64(after.heap-before.heap)/memoryObjects, "heap-B/timer")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// memoryObjectsOf makes the objects of a memory benchmark, with a label
// each as most objects have.
func memoryObjectsOf() []client.Object {
	objs := make([]client.Object, memoryObjects)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("o", i),
			UID: types.UID(fmt.Sprint("u", i)), Labels: map[string]string{"app": "bench"}}}
	}
	return objs
}

type inUse struct{ heap, stack int64 }

// memoryInUse is the live heap and the goroutines' stacks, after a full
// garbage collection.
func memoryInUse() inUse {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return inUse{heap: int64(m.HeapAlloc), stack: int64(m.StackInuse)}
}

// waitUntil waits until cond holds.
func waitUntil(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}
