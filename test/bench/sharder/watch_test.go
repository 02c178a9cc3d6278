//go:build linux

package sharder

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// The reference design's labels, followed by the ring's name.
const (
	shardLabelPrefix = "shard.alpha.sharding.timebertt.dev/"
	drainLabelPrefix = "drain.alpha.sharding.timebertt.dev/"
)

// recorder keeps the history of every KopfExample of one namespace, from
// an informer of the test's own: every version it sees, with its sharding
// labels and the handlers' outcomes.
type recorder struct {
	ring string
	mu   sync.Mutex
	h    Histories
}

// startRecorder starts the recorder of ns and waits for its informer to
// sync; it stops when ctx ends.
func startRecorder(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, ns, ring string) (*recorder, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating the test's cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &kopfv1.KopfExample{})
	if err != nil {
		return nil, err
	}
	r := &recorder{ring: ring, h: Histories{}}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(obj, false) },
		UpdateFunc: func(_, obj any) { r.observe(obj, false) },
		DeleteFunc: func(obj any) { r.observe(obj, true) },
	})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the test's cache of namespace %s did not sync", ns)
	}
	return r, nil
}

func (r *recorder) observe(obj any, gone bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, gone = d.Obj, true
	}
	kex, ok := obj.(*kopfv1.KopfExample)
	if !ok {
		return
	}
	_, draining := kex.Labels[drainLabelPrefix+r.ring]
	v := Version{At: time.Now(), Shard: kex.Labels[shardLabelPrefix+r.ring], Draining: draining,
		Finalizers: len(kex.Finalizers), Created: scenario.Handled(kex, 1, false), Updated: scenario.Handled(kex, 1, true), Gone: gone}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h[kex.Name] = append(r.h[kex.Name], v)
}

// histories returns a copy of what the recorder has seen so far.
func (r *recorder) histories() Histories {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(Histories, len(r.h))
	for name, vs := range r.h {
		out[name] = slices.Clone(vs)
	}
	return out
}

// reached returns when the last of names was first seen in a version
// that goal accepts, and whether all of them were.
func (r *recorder) reached(names []string, goal func(Version) bool) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, name := range names {
		i := slices.IndexFunc(r.h[name], goal)
		if i < 0 {
			return time.Time{}, false
		}
		if at := r.h[name][i].At; at.After(last) {
			last = at
		}
	}
	return last, true
}

// await waits until every object of names has been seen in a version that
// goal accepts and returns when the last one was, or fails after timeout.
func (r *recorder) await(ctx context.Context, names []string, goal func(Version) bool, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if at, ok := r.reached(names, goal); ok {
			return at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d objects reached the goal: %w", r.count(names, goal), len(names), ctx.Err())
		case <-tick.C:
		}
	}
}

// count returns how many of names were seen in a version goal accepts.
func (r *recorder) count(names []string, goal func(Version) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, name := range names {
		if slices.ContainsFunc(r.h[name], goal) {
			n++
		}
	}
	return n
}
