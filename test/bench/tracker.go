//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// tracker watches the benchmark's objects in one namespace, through an
// informer of the load generator's own, and tells when every object has
// reached the state a phase waits for. It is event-driven, so the time a
// phase ends is the time the last object's event arrived.
type tracker struct {
	mu      sync.Mutex
	objs    map[string]client.Object // what the informer shows, by name
	names   []string                 // the objects of the run
	known   map[string]bool          // names as a set
	goal    func(client.Object) bool // nil object: it is gone
	waiting map[string]bool          // the objects the goal is for
	reached map[string]bool
	doneAt  time.Time
	done    chan struct{}
	// also, if set, sees every event of the run's objects too.
	also func(o client.Object, gone bool)
}

// startTracker starts an informer for objects of kind in ns and waits for
// it to sync. It stops when ctx ends.
func startTracker(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, kind scenario.Kind, ns string, names []string) (*tracker, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating the load generator's cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, kind.New("", ""))
	if err != nil {
		return nil, err
	}
	t := &tracker{objs: map[string]client.Object{}, names: names, known: map[string]bool{}}
	for _, name := range names {
		t.known[name] = true
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, false) },
		UpdateFunc: func(_, obj any) { t.observe(obj, false) },
		DeleteFunc: func(obj any) { t.observe(obj, true) },
	})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the load generator's cache of namespace %s did not sync", ns)
	}
	return t, nil
}

func (t *tracker) observe(obj any, gone bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, gone = d.Obj, true
	}
	o, ok := obj.(client.Object)
	if !ok || !t.known[o.GetName()] {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.also != nil {
		t.also(o, gone)
	}
	if gone {
		delete(t.objs, o.GetName())
	} else {
		t.objs[o.GetName()] = o
	}
	t.check(o.GetName())
}

// observeAlso has fn see every later event of the run's objects, with
// the tracker's lock held.
func (t *tracker) observeAlso(fn func(o client.Object, gone bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.also = fn
}

// expect starts a phase: from now on, wait tells when goal holds for each
// of names, objects of the run (goal receives nil for an object that is
// gone). It returns t, the phase's waiter.
func (t *tracker) expect(names []string, goal func(client.Object) bool) waiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.goal, t.reached, t.doneAt, t.done = goal, map[string]bool{}, time.Time{}, make(chan struct{})
	t.waiting = map[string]bool{}
	for _, name := range names {
		t.waiting[name] = true
	}
	for _, name := range names {
		t.check(name)
	}
	return t
}

// check re-evaluates one object; t.mu is held.
func (t *tracker) check(name string) {
	if t.goal == nil || !t.doneAt.IsZero() || !t.waiting[name] {
		return
	}
	if t.goal(t.objs[name]) {
		t.reached[name] = true
	} else {
		delete(t.reached, name)
	}
	if len(t.reached) == len(t.waiting) {
		t.doneAt = time.Now()
		close(t.done)
	}
}

// progress returns how many objects have reached the goal, of how many.
func (t *tracker) progress() (done, of int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.reached), len(t.waiting)
}

// wait returns when every object reached the goal, and that time.
func (t *tracker) wait(ctx context.Context) (time.Time, error) {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	select {
	case <-done:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.doneAt, nil
	case <-ctx.Done():
		done, of := t.progress()
		return time.Time{}, fmt.Errorf("%d of %d objects done: %w", done, of, ctx.Err())
	}
}
