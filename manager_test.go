package gopf_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/gomega"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/reconcile"
)

func TestTheManagersCacheDropsManagedFieldsUnlessToldToKeepThem(t *testing.T) {
	cp, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	admin, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "managed"}, Data: map[string]string{"a": "b"}}
	if err := admin.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) == 0 {
		t.Fatal("the API server set no managedFields; the test shows nothing")
	}

	for _, keep := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		mgr, err := gopf.NewManager(cp.Config, handlers.NewRegistry(), gopf.ManagerOptions{KeepManagedFields: keep, SkipNameValidation: true})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- mgr.Start(ctx) }()
		var cached corev1.ConfigMap
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			err = errors.New("the cache did not start")
		} else {
			err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &cached) // through the cache
		}
		cancel()
		if stopErr := <-stopped; stopErr != nil {
			t.Errorf("KeepManagedFields %v: the manager stopped with %v", keep, stopErr)
		}
		switch {
		case err != nil:
			t.Errorf("KeepManagedFields %v: reading from the cache: %v", keep, err)
		case keep && len(cached.ManagedFields) == 0:
			t.Error("KeepManagedFields true: the cached object has no managedFields")
		case !keep && len(cached.ManagedFields) != 0:
			t.Errorf("by default the cached object still has managedFields: %v", cached.ManagedFields)
		}
		if cached.Data["a"] != "b" {
			t.Errorf("KeepManagedFields %v: the cached object lost its data: %v", keep, cached.Data)
		}
	}
}

// TestCachedObjectsTakeLessHeapWithoutManagedFields measures the heap a
// cached KopfExample takes, with and without managedFields, and logs it
// (go test -run CachedObjects -v .): the managedFields of one writer
// already cost a good part of a small object.
func TestCachedObjectsTakeLessHeapWithoutManagedFields(t *testing.T) {
	const n = 300
	cp, err := envtest.Start(envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	scheme := envtest.NewScheme(kopfv1.AddToScheme)
	admin, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		obj := &kopfv1.KopfExample{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("heap-%04d", i)},
			Spec:       kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
		}
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	perObject := map[bool]float64{}
	for _, keep := range []bool{true, false} {
		mgr, err := gopf.NewManager(cp.Config, handlers.NewRegistry(), gopf.ManagerOptions{Scheme: scheme, KeepManagedFields: keep, SkipNameValidation: true})
		if err != nil {
			t.Fatal(err)
		}
		before := liveHeap()
		ctx, cancel := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- mgr.Start(ctx) }()
		var list kopfv1.KopfExampleList
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			err = errors.New("the cache did not start")
		} else {
			err = mgr.GetClient().List(ctx, &list) // starts the informer and waits for its list
		}
		after := liveHeap()
		runtime.KeepAlive(mgr)
		cancel()
		if stopErr := <-stopped; stopErr != nil {
			t.Fatal(stopErr)
		}
		if err != nil || len(list.Items) != n {
			t.Fatalf("KeepManagedFields %v: %d objects in the cache (%v), want %d", keep, len(list.Items), err, n)
		}
		perObject[keep] = float64(after-before) / n
		t.Logf("KeepManagedFields %v: %.0f bytes of heap per cached KopfExample (the manager included)", keep, perObject[keep])
	}
	if perObject[false] >= perObject[true] {
		t.Errorf("without managedFields a cached object takes %.0f bytes, with them %.0f", perObject[false], perObject[true])
	}
}

// liveHeap is the heap in use after a garbage collection, once it no
// longer shrinks (goroutines of a stopped manager may still hold memory
// for a moment).
func liveHeap() int64 {
	read := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	last := read()
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		now := read()
		if now >= last-16<<10 {
			return now
		}
		last = now
	}
	return last
}

// A hung handler that honours its context holds a worker only as long as
// ReconciliationTimeout: its context is cancelled, its outcome is written,
// and it is retried.
func TestAReconciliationTimeoutCancelsAHungHandlerWhichIsRetried(t *testing.T) {
	ns := envtest.New(t, scheme).Namespace
	var calls atomic.Int32
	cancelled := make(chan error, 1)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // hung until the reconcile's deadline
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		}
		return "done", nil
	}, handlers.ID("hangs"), handlers.Backoff(100*time.Millisecond))
	mgr, err := gopf.NewManager(cfg, reg, gopf.ManagerOptions{
		ReconciliationTimeout: time.Second, SkipNameValidation: true, Engine: reconcile.Options{Namespaces: []string{ns}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	})
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hung"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the hung handler's context ended with %v, want the reconcile's deadline", err)
		}
	case <-time.After(timeout):
		t.Fatal("the hung handler's context was never cancelled")
	}
	g := NewWithT(t)
	g.Eventually(func() int32 { return calls.Load() }, timeout, 50*time.Millisecond).Should(BeNumerically(">=", 2), "the handler was not retried")
	g.Eventually(func() string {
		var got corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
			return err.Error()
		}
		return got.Annotations["gopf.dev/last-handled-configuration"]
	}, timeout, 50*time.Millisecond).ShouldNot(BeEmpty(), "the create was never recorded as handled")
}

// A shard whose Lease namespace does not exist would retry its Lease every
// few seconds and never join: building its manager fails instead, with an
// error that names the namespace. One that exists passes.
func TestAShardNamespaceThatDoesNotExistStopsTheManagerBeingBuilt(t *testing.T) {
	build := func(namespace string) error {
		sharding := &reconcile.Sharding{Ring: "ring", Shard: "a", Namespace: namespace}
		_, err := gopf.NewManager(cfg, handlers.NewRegistry(), gopf.ManagerOptions{
			Scheme: scheme, Engine: reconcile.Options{Sharding: sharding}, SkipNameValidation: true,
		})
		return err
	}
	err := build("no-such-namespace")
	var missing *shard.NamespaceNotFoundError
	if !errors.As(err, &missing) || missing.Namespace != "no-such-namespace" {
		t.Errorf("a shard in a namespace that does not exist: %v, want a NamespaceNotFoundError", err)
	}
	if err := build("default"); err != nil {
		t.Errorf("a shard in the namespace default: %v", err)
	}
}

func TestTheAPIServerEndsWatchesAfterTheWatchServerTimeout(t *testing.T) {
	cs, err := kubernetes.NewForConfig(gopf.ClientConfig(cfg, gopf.ManagerOptions{WatchServerTimeout: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// client-go's reflector asks for 5 to 10 minutes; this asks for 10.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](600)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case _, open := <-w.ResultChan():
			if !open {
				return // the API server ended it
			}
		case <-ctx.Done():
			t.Fatal("the watch was not ended by the API server within 2 minutes; it asked for 2 seconds")
		}
	}
}
