package gopf_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// startNarrowing runs reg in a manager of NewManager limited to ns, with
// the kinds narrowed to their handlers' labels unless cacheUnselected, and
// stops it when the test ends.
func startNarrowing(t *testing.T, reg *handlers.Registry, ns string, cacheUnselected bool) manager.Manager {
	t.Helper()
	mgr, stop := runNarrowing(t, reg, ns, cacheUnselected)
	t.Cleanup(stop)
	return mgr
}

// runNarrowing is startNarrowing that leaves the manager to the caller to
// stop (stop waits for it to return).
func runNarrowing(t *testing.T, reg *handlers.Registry, ns string, cacheUnselected bool) (manager.Manager, func()) {
	t.Helper()
	mgr, err := gopf.NewManager(cfg, reg, gopf.ManagerOptions{
		Scheme: scheme, SkipNameValidation: true, CacheUnselected: cacheUnselected,
		Engine: reconcile.Options{Namespaces: []string{ns}, DefaultBackoff: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		t.Fatal("the cache did not start")
	}
	return mgr, stop
}

// cachedNames are the names of the ConfigMaps of ns in the manager's cache.
func cachedNames(g Gomega, mgr manager.Manager, ns string) []string {
	var list corev1.ConfigMapList
	g.Expect(mgr.GetCache().List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	return names
}

func configMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func TestObjectsNoHandlerCanSelectByTheirLabelsNeverReachTheCache(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	var created sync.Map
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(_ context.Context, cm *corev1.ConfigMap, _ *handlers.Cause) (any, error) {
		created.Store(cm.Name, true)
		return nil, nil
	}, handlers.Labels{"app": "narrow"})
	handlers.OnReconcile(reg, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (ctrlreconcile.Result, error) {
		return ctrlreconcile.Result{}, nil
	}, handlers.Labels{"app": "narrow", "tier": func(string) bool { return true }})
	mgr := startNarrowing(t, reg, env.Namespace, false)

	// Watch events of one kind and namespace come in order: once the cache
	// shows the last object, it has seen the others.
	for _, cm := range []*corev1.ConfigMap{
		configMap(env.Namespace, "unlabelled", nil),
		configMap(env.Namespace, "other-app", map[string]string{"app": "other"}),
		configMap(env.Namespace, "selected", map[string]string{"app": "narrow"}),
	} {
		g.Expect(env.Client.Create(env.Ctx, cm)).To(Succeed())
	}
	g.Eventually(func() bool { _, ok := created.Load("selected"); return ok }, timeout).Should(BeTrue())
	g.Expect(cachedNames(g, mgr, env.Namespace)).To(Equal([]string{"selected"}))
	err := mgr.GetClient().Get(env.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: "unlabelled"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the manager's client reads the narrowed cache: %v", err)
	_, ran := created.Load("other-app")
	g.Expect(ran).To(BeFalse())
}

func TestAKindWithOneHandlerThatTakesEveryObjectIsCachedWhole(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	var levels sync.Map
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.Labels{"app": "narrow"})
	handlers.OnReconcile(reg, func(_ context.Context, cm *corev1.ConfigMap, _ *handlers.Cause) (ctrlreconcile.Result, error) {
		levels.Store(cm.Name, true)
		return ctrlreconcile.Result{}, nil
	})
	mgr := startNarrowing(t, reg, env.Namespace, false)

	g.Expect(env.Client.Create(env.Ctx, configMap(env.Namespace, "selected", map[string]string{"app": "narrow"}))).To(Succeed())
	g.Expect(env.Client.Create(env.Ctx, configMap(env.Namespace, "unlabelled", nil))).To(Succeed())
	g.Eventually(func() bool { _, ok := levels.Load("unlabelled"); return ok }, timeout).Should(BeTrue())
	g.Expect(cachedNames(g, mgr, env.Namespace)).To(Equal([]string{"selected", "unlabelled"}))
}

// An object that stops matching its handlers' labels loses gopf's
// finalizer and runs no delete handler, whether the cache is narrowed
// (the object then leaves the cache as if deleted) or holds every object
// and the filters run in memory.
func TestAnObjectThatLeavesTheLabelSelectorIsReleasedAsWhenFiltersStopMatchingInMemory(t *testing.T) {
	for _, mode := range []struct {
		name            string
		cacheUnselected bool
	}{{"narrowed cache", false}, {"filters in memory", true}} {
		t.Run(mode.name, func(t *testing.T) {
			g := NewWithT(t)
			env := envtest.New(t, scheme)
			var creates, deletes atomic.Int32
			reg := countingCreatesAndDeletes(&creates, &deletes)
			mgr := startNarrowing(t, reg, env.Namespace, mode.cacheUnselected)

			cm := configMap(env.Namespace, "leaving", map[string]string{"app": "narrow"})
			g.Expect(env.Client.Create(env.Ctx, cm)).To(Succeed())
			key := client.ObjectKeyFromObject(cm)
			finalizers := func() []string {
				var live corev1.ConfigMap
				g.Expect(env.Client.Get(env.Ctx, key, &live)).To(Succeed())
				return live.Finalizers
			}
			g.Eventually(finalizers, timeout).Should(ContainElement("gopf.dev/finalizer"))
			g.Eventually(creates.Load, timeout).Should(BeEquivalentTo(1))

			g.Expect(env.Client.Patch(env.Ctx, cm, client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)))).To(Succeed())
			g.Eventually(finalizers, timeout).ShouldNot(ContainElement("gopf.dev/finalizer"))
			if !mode.cacheUnselected {
				g.Eventually(func(g Gomega) []string { return cachedNames(g, mgr, env.Namespace) }, timeout).Should(BeEmpty())
			}
			g.Expect(env.Client.Delete(env.Ctx, cm)).To(Succeed())
			g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(env.Ctx, key, &corev1.ConfigMap{})) }, timeout).Should(BeTrue())
			g.Consistently(deletes.Load, 2*time.Second).Should(BeZero())
			g.Expect(creates.Load()).To(BeEquivalentTo(1))
		})
	}
}

// An object that leaves the selector while the operator is not running
// never reaches the restarted operator's narrowed cache; the operator finds
// it with one metadata list at start and releases it as if it had left
// while running: no delete handler, the finalizer removed. An object still
// in the selector keeps it.
func TestAnObjectThatLeftTheSelectorWhileTheOperatorWasDownIsReleasedAtStart(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	var creates, deletes atomic.Int32
	reg := countingCreatesAndDeletes(&creates, &deletes)
	finalizers := func(name string) func() []string {
		return func() []string {
			var live corev1.ConfigMap
			g.Expect(env.Client.Get(env.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &live)).To(Succeed())
			return live.Finalizers
		}
	}
	_, stop := runNarrowing(t, reg, env.Namespace, false)
	leaving := configMap(env.Namespace, "leaving", map[string]string{"app": "narrow"})
	staying := configMap(env.Namespace, "staying", map[string]string{"app": "narrow"})
	for _, cm := range []*corev1.ConfigMap{leaving, staying} {
		g.Expect(env.Client.Create(env.Ctx, cm)).To(Succeed())
		g.Eventually(finalizers(cm.Name), timeout).Should(ContainElement("gopf.dev/finalizer"))
	}
	g.Eventually(creates.Load, timeout).Should(BeEquivalentTo(2))
	stop()

	g.Expect(env.Client.Patch(env.Ctx, leaving, client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)))).To(Succeed())
	mgr := startNarrowing(t, reg, env.Namespace, false)
	g.Eventually(finalizers("leaving"), timeout).ShouldNot(ContainElement("gopf.dev/finalizer"))
	g.Expect(finalizers("staying")()).To(ContainElement("gopf.dev/finalizer"))
	g.Expect(cachedNames(g, mgr, env.Namespace)).To(Equal([]string{"staying"}))
	g.Expect(env.Client.Delete(env.Ctx, leaving)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(env.Ctx, client.ObjectKeyFromObject(leaving), &corev1.ConfigMap{}))
	}, timeout).Should(BeTrue())
	g.Consistently(deletes.Load, 2*time.Second).Should(BeZero())
	g.Expect(creates.Load()).To(BeEquivalentTo(2))
	g.Expect(finalizers("staying")()).To(ContainElement("gopf.dev/finalizer"))
}

// TestANarrowedCacheTakesLessHeap measures the heap a manager's cache of
// ConfigMaps takes when one in ten carries the label every handler selects,
// narrowed and whole, and logs it with the process's resident memory (go
// test -run NarrowedCacheTakesLessHeap -v .). GOPF_NARROW_OBJECTS sets the
// number of objects (default 1000; docs/narrowed-cache.md gives the
// figures for 10000); GOPF_NARROW_ONLY=narrowed or whole measures one
// cache alone, so that the resident memory is that cache's process's.
func TestANarrowedCacheTakesLessHeap(t *testing.T) {
	n := 1000
	if s := os.Getenv("GOPF_NARROW_OBJECTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	modes := []bool{true, false} // CacheUnselected
	switch os.Getenv("GOPF_NARROW_ONLY") {
	case "narrowed":
		modes = []bool{false}
	case "whole":
		modes = []bool{true}
	}
	env := envtest.New(t, scheme)
	data := map[string]string{"config.yaml": strings.Repeat("key: value\n", 40)} // 440 bytes
	names := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range names {
				cm := configMap(env.Namespace, fmt.Sprintf("cm-%05d", i), map[string]string{"app": "other"})
				if i%10 == 0 {
					cm.Labels["app"] = "narrow"
				}
				cm.Data = data
				if err := env.Client.Create(env.Ctx, cm); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	heap := map[bool]int64{}
	for _, cacheUnselected := range modes {
		reg := handlers.NewRegistry()
		handlers.OnIndex(reg, "narrow-by-name", func(cm *corev1.ConfigMap, _ *handlers.Cause) map[string]bool {
			return map[string]bool{cm.Name: true}
		}, handlers.Labels{"app": "narrow"})
		before := liveHeap()
		ctx, cancel := context.WithCancel(env.Ctx)
		mgr, err := gopf.NewManager(cfg, reg, gopf.ManagerOptions{
			Scheme: scheme, SkipNameValidation: true, CacheUnselected: cacheUnselected,
			Engine: reconcile.Options{Namespaces: []string{env.Namespace}},
		})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- mgr.Start(ctx) }()
		var list corev1.ConfigMapList
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			err = errors.New("the cache did not start")
		} else {
			err = mgr.GetClient().List(ctx, &list, client.InNamespace(env.Namespace))
		}
		after := liveHeap()
		runtime.KeepAlive(mgr)
		cancel()
		if stopErr := <-stopped; stopErr != nil {
			t.Fatal(stopErr)
		}
		want := n
		if !cacheUnselected {
			want = (n + 9) / 10
		}
		if err != nil || len(list.Items) != want {
			t.Fatalf("CacheUnselected %v: %d objects in the cache (%v), want %d", cacheUnselected, len(list.Items), err, want)
		}
		heap[cacheUnselected] = after - before
		t.Logf("CacheUnselected %v: %d ConfigMaps cached, %.1f MiB of heap (the manager included), the process's resident memory %s",
			cacheUnselected, len(list.Items), float64(heap[cacheUnselected])/(1<<20), residentMemory())
	}
	if len(modes) == 1 {
		return
	}
	t.Logf("narrowing saved %.1f MiB of heap (%.0f %%)", float64(heap[true]-heap[false])/(1<<20), 100*float64(heap[true]-heap[false])/float64(heap[true]))
	if heap[false] >= heap[true] {
		t.Errorf("narrowed, the cache takes %d bytes; whole, %d", heap[false], heap[true])
	}
}

// residentMemory is the process's resident set size and its peak, as
// Linux reports them ("" elsewhere).
func residentMemory() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var out []string
	for line := range strings.SplitSeq(string(status), "\n") {
		if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(out, ", ")
}

// countingCreatesAndDeletes registers a create and a delete handler of
// ConfigMaps labelled app=narrow that count their calls.
func countingCreatesAndDeletes(creates, deletes *atomic.Int32) *handlers.Registry {
	selected := handlers.Labels{"app": "narrow"}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		creates.Add(1)
		return nil, nil
	}, selected)
	handlers.OnDelete(reg, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		deletes.Add(1)
		return nil, nil
	}, selected)
	return reg
}
