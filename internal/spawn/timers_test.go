package spawn

import (
	"context"
	"errors"
	"sync"
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

// failingWriteKind is a kind whose timer function counts its calls and
// whose first writes fail, as in an API server outage.
type failingWriteKind struct {
	kind
	calls    atomic.Int64
	failures atomic.Int64 // writes still to fail
	first    atomic.Pointer[spec.Patch]
	sent     chan *spec.Patch
}

func (k *failingWriteKind) Call(_ context.Context, _ *contract.Handler, _ client.Object, c *handlers.Cause) (any, error) {
	if k.calls.Add(1) == 1 {
		k.first.Store((*spec.Patch)(c.Patch))
	}
	return map[string]any{"ticked": true}, nil
}

func (k *failingWriteKind) SendPatch(_ context.Context, _ client.Object, p *spec.Patch) error {
	if k.failures.Add(-1) >= 0 {
		return errors.New("connection refused")
	}
	k.sent <- p
	return nil
}

// A timer whose patch could not be written has run: its next attempt sends
// that patch again, and does not call the function again.
func TestATimerWhosePatchCouldNotBeWrittenSendsItAgainWithoutANewCall(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("t"), handlers.Backoff(10*time.Millisecond))
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}}
	k := &failingWriteKind{sent: make(chan *spec.Patch, 1)}
	k.failures.Store(3)
	s := New(k, configMaps(logr.Discard(), obj))
	run(t, s)
	s.Sync(types.NamespacedName{Namespace: "ns", Name: "o"}, obj, "{}", contract.SetOf(reg).Handlers(spec.KindTimer))
	var p *spec.Patch
	select {
	case p = <-k.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer's patch was never written")
	}
	if n := k.calls.Load(); n != 1 {
		t.Errorf("the timer's function was called %d times for one run whose first three writes failed, want once", n)
	}
	if p != k.first.Load() || p.Empty() {
		t.Error("the patch written is not the first call's, with its result")
	}
}

// blockingKind is a kind whose timer function blocks until release is
// closed, and which says when an object is to be reconciled again.
type blockingKind struct {
	kind
	called  chan struct{}
	release chan struct{}
	woken   chan struct{}
}

func (k *blockingKind) Call(context.Context, *contract.Handler, client.Object, *handlers.Cause) (any, error) {
	k.called <- struct{}{}
	<-k.release
	return nil, nil
}

func (k *blockingKind) WakeUp(context.Context, client.Object) {
	select {
	case k.woken <- struct{}{}:
	default:
	}
}

// A run of a timer under way when its object is deleted holds the object,
// as a daemon does (and as Kopf's finalizer waits for a timer's task):
// Stop lets it go only once the run has returned, and the object is
// reconciled again then.
func TestATimerRunUnderWayHoldsItsDeletedObjectUntilItReturns(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("t"))
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}}
	k := &blockingKind{called: make(chan struct{}), release: make(chan struct{}), woken: make(chan struct{}, 1)}
	s := New(k, configMaps(logr.Discard(), obj))
	run(t, s)
	release := sync.OnceFunc(func() { close(k.release) })
	t.Cleanup(release) // before the spawner stops: cleanups run last first
	key := types.NamespacedName{Namespace: "ns", Name: "o"}
	s.Sync(key, obj, "{}", contract.SetOf(reg).Handlers(spec.KindTimer))
	select {
	case <-k.called:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never ran")
	}
	if s.Stop(key, handlers.StopDeleted) {
		t.Fatal("Stop let the object go while a run of its timer was under way")
	}
	release()
	select {
	case <-k.woken:
	case <-time.After(10 * time.Second):
		t.Fatal("the object was not reconciled again once the run returned")
	}
	if !s.Stop(key, handlers.StopDeleted) {
		t.Error("Stop still holds the object after the run returned")
	}
}
