package spawn

import (
	"context"
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
	"github.com/gopf-dev/gopf/internal/state"
)

func TestATimerComparesItsResultWithTheNewestOfItsWriteAndTheObjectCopy(t *testing.T) {
	steady := map[string]any{"state": "steady"}
	last := &writtenResult{value: steady, version: "20"}
	cases := []struct {
		name    string
		stored  any    // the timer's result in the object copy's status
		version string // the copy's resourceVersion
		last    *writtenResult
		result  any
		write   bool
	}{
		{"never written, copy without it", nil, "10", nil, steady, true},
		{"never written, copy with it", steady, "10", nil, steady, false},
		{"copy older than the last write repeats nothing", nil, "10", last, steady, false},
		{"copy older than the last write, a changed result", nil, "10", last, map[string]any{"state": "moved"}, true},
		{"copy older shows an old value the result returns to", map[string]any{"state": "old"}, "10", last, map[string]any{"state": "old"}, true},
		{"copy as new as the last write", steady, "20", last, steady, false},
		{"copy newer: someone changed the result since", map[string]any{"state": "edited"}, "30", last, steady, true},
		{"versions that do not compare trust the copy", nil, "x", last, steady, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := state.Changes(newestResult(c.stored, c.version, c.last), c.result); got != c.write {
				t.Errorf("written: %v, want %v", got, c.write)
			}
		})
	}
}

func TestAfterMergeIsWhatTheAPIServerStores(t *testing.T) {
	stored := map[string]any{"a": int64(1), "b": map[string]any{"c": "x", "d": "y"}}
	got := afterMerge(stored, map[string]any{"a": int64(2), "b": map[string]any{"d": nil}})
	want := map[string]any{"a": int64(2), "b": map[string]any{"c": "x"}}
	if !state.SameJSON(got, want) {
		t.Errorf("afterMerge: %v, want %v", got, want)
	}
	if !state.SameJSON(stored, map[string]any{"a": int64(1), "b": map[string]any{"c": "x", "d": "y"}}) {
		t.Errorf("afterMerge changed what was stored: %v", stored)
	}
	if got := afterMerge(stored, "plain"); got != "plain" {
		t.Errorf("a result that is not an object replaces: %v", got)
	}
	if got := afterMerge("plain", map[string]any{"a": nil, "b": int64(1)}); !state.SameJSON(got, map[string]any{"b": int64(1)}) {
		t.Errorf("an object replaces what is not one: %v", got)
	}
}

// cacheKind is a Kind whose cache holds one object and whose calls report
// the object they were given.
type cacheKind struct {
	kind
	cached client.Object
	calls  chan client.Object
}

func (k *cacheKind) Read(context.Context, types.NamespacedName) (client.Object, error) {
	return k.cached.DeepCopyObject().(client.Object), nil
}

func (k *cacheKind) Call(_ context.Context, _ *contract.Handler, obj client.Object, _ *handlers.Cause) (any, error) {
	k.calls <- obj
	return nil, nil
}

// A timer reads its object from the cache when it runs, and the spawner
// keeps no copy of objects that have timers only; it keeps one of objects
// with daemons, whose Object needs it.
func TestATimerRunsOnTheCachedObjectAndOnlyDaemonsKeepACopy(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("t"))
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*corev1.ConfigMap]) error {
		<-d.Stopping()
		return nil
	}, handlers.ID("d"))
	set := contract.SetOf(reg)
	timers, daemons := set.Handlers(spec.KindTimer), set.Handlers(spec.KindDaemon)

	seen := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "u1", ResourceVersion: "1"}}
	cached := seen.DeepCopy()
	cached.ResourceVersion, cached.Data = "2", map[string]string{"newer": "yes"}
	k := &cacheKind{cached: cached, calls: make(chan client.Object, 1)}
	s := New(k, Options{Name: "configmaps", Log: logr.Discard(), Workers: 1, DefaultBackoff: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for !s.started() {
		time.Sleep(time.Millisecond) // Start sets the context first thing
	}

	key := types.NamespacedName{Namespace: "ns", Name: "cm"}
	s.Sync(key, seen, "{}", timers)
	select {
	case obj := <-k.calls:
		if obj.GetResourceVersion() != "2" {
			t.Errorf("the timer ran on version %s, not the cache's 2", obj.GetResourceVersion())
		}
	case <-time.After(time.Minute):
		t.Fatal("the timer did not run")
	}
	if s.copyOf(key) != nil {
		t.Error("the spawner keeps a copy of an object that has only timers")
	}
	s.Sync(key, seen, "{}", append(timers, daemons...))
	if s.copyOf(key) == nil {
		t.Error("the spawner keeps no copy of an object with a daemon, which its Object needs")
	}
	s.Stop(key, handlers.StopDeleted)
}

// started reports whether Start has begun.
func (s *Spawner) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx != nil
}

// copyOf returns the spawner's copy of the object of key, if it keeps one.
func (s *Spawner) copyOf(key types.NamespacedName) client.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.objects[key]; o != nil {
		return o.latest
	}
	return nil
}
