package scale

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// TestManyObjectsWithATimerEach creates GOPF_SCALE objects with a 10 s timer
// each on one in-process operator, lets every timer tick a few times, and
// records the heap per object and how late the ticks were.
func TestManyObjectsWithATimerEach(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GOPF_SCALE"))
	if n <= 0 {
		t.Skip("set GOPF_SCALE=<objects> to run the scale measurement")
	}
	const interval = 10 * time.Second
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	scheme := kruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kopfv1.AddToScheme(scheme)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(&cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var lateness []time.Duration
	last := map[string]time.Time{}
	var ticks atomic.Int64
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, interval, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		now := time.Now()
		mu.Lock()
		if prev, ok := last[obj.Name]; ok {
			lateness = append(lateness, now.Sub(prev)-interval)
		}
		last[obj.Name] = now
		mu.Unlock()
		ticks.Add(1)
		return nil, nil
	}, handlers.ID("tick"), handlers.Sharp())

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	op, err := envtest.RunOperator(ctx, &cfg, reg, envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{"scale"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = op.Stop() }()

	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: "scale", Name: fmt.Sprintf("obj-%05d", i)}}
				if err := c.Create(ctx, obj); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	created := time.Since(start)

	// Wait until every object has ticked at least three times.
	deadline := time.Now().Add(10 * time.Minute)
	for ticks.Load() < int64(3*n) && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	goroutines := runtime.NumGoroutine()

	mu.Lock()
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	pct := func(p float64) time.Duration {
		if len(lateness) == 0 {
			return 0
		}
		return lateness[int(p*float64(len(lateness)-1))]
	}
	report := fmt.Sprintf(`# Timers at scale

<!-- Written by test/scale (GOPF_SCALE=%d go test ./test/scale). -->

One in-process operator, %d KopfExample objects with a sharp %s timer
each (a timer that returns nothing, so ticks cost no writes), on the
machine the benchmarks describe (2 cores). Run on %s.

| figure | value |
| --- | --- |
| objects created | %d in %s |
| timer ticks observed | %d (%d intervals measured) |
| heap in use after the ticks, minus before the operator started | %.1f MiB (%.1f KiB per object, informer cache included) |
| goroutines in the test process | %d (timers wait in one queue ordered by due time; a fixed pool of workers runs them) |
| lateness of a tick against its interval: p50 / p99 / max | %s / %s / %s |
`, n, n, interval, time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		n, created.Round(time.Millisecond), ticks.Load(), len(lateness),
		float64(after.HeapInuse-before.HeapInuse)/(1<<20), float64(after.HeapInuse-before.HeapInuse)/1024/float64(n),
		goroutines, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	mu.Unlock()
	t.Log("\n" + report)
	if err := os.WriteFile("../../docs/timers-scale.md", []byte(strings.TrimSpace(report)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
