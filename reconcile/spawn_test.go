package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// starts records when a timer started, per test.
type starts struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *starts) add() { s.addAt(time.Now()) }

// addAt records a start at t, e.g. the engine's start of a timer run
// (Cause.Started), which is what a timer's schedule is measured from.
func (s *starts) addAt(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, t)
}

func (s *starts) get() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

func (s *starts) count() int { return len(s.get()) }

func TestSharpTimersKeepTheirGridAndOthersSleepAfterEachRun(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	const interval, work = 500 * time.Millisecond, 250 * time.Millisecond
	var plain, sharp starts
	slow := func(s *starts) handlers.HandlerFunc[*kopfv1.KopfExample] {
		return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			s.addAt(c.Started)
			time.Sleep(work)
			return nil, nil
		}
	}
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, interval, slow(&plain), handlers.ID("plain"))
	handlers.OnTimer(reg, interval, slow(&sharp), handlers.ID("sharp"), handlers.Sharp())
	runOperator(t, ns, reg)
	g.Expect(k8s.Create(context.Background(), newExample(ns, "timed"))).To(Succeed())

	g.Eventually(plain.count, timeout).Should(BeNumerically(">=", 5))
	g.Eventually(sharp.count, timeout).Should(BeNumerically(">=", 5))
	p, s := plain.get(), sharp.get()
	for i := 1; i < 5; i++ {
		g.Expect(p[i].Sub(p[i-1])).To(BeNumerically(">=", interval+work), "a plain timer sleeps the interval after each run")
		g.Expect(s[i].Sub(s[0])).To(BeNumerically(">=", time.Duration(i)*interval), "a sharp timer runs on its grid")
	}
	// Four plain periods take at least 3 s; four sharp ones about 2 s.
	g.Expect(s[4].Sub(s[0])).To(BeNumerically("<", p[4].Sub(p[0])))
}

func TestTimersDoNotOverlapThemselvesAndWriteOnlyChangedResults(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var running, maxRunning atomic.Int32
	var runs starts
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, 50*time.Millisecond, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		runs.add()
		time.Sleep(150 * time.Millisecond)
		return map[string]any{"state": "steady"}, nil
	}, handlers.ID("tick"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })
	obj := newExample(ns, "ticking")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "tick", "state") }, timeout).Should(Equal("steady"))
	g.Eventually(runs.count, timeout).Should(BeNumerically(">=", 6))
	g.Expect(maxRunning.Load()).To(Equal(int32(1)))
	// The finalizer and one result; no last-handled state, as no change
	// handler needs it. Later ticks return the same result and write nothing.
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).Should(Equal(2), "%v", requests.Snapshot())
	g.Expect(statusField(g, key, "gopf", "lastHandled")).To(BeNil())
}

func TestIdleTimersWaitUntilTheObjectStopsChanging(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var runs starts
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, 0, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		runs.add()
		return nil, nil
	}, handlers.ID("quiet"), handlers.Idle(time.Second))
	runOperator(t, ns, reg)
	obj := newExample(ns, "busy")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	var lastChange time.Time
	for i := 0; i < 8; i++ { // a change every 300 ms for 2.4 s
		lastChange = time.Now() // the operator cannot see the change before it is sent
		patchSpec(g, obj, `{"duration":"`+time.Duration(i).String()+`"}`)
		time.Sleep(300 * time.Millisecond)
	}
	g.Expect(runs.count()).To(BeZero(), "no run while the object keeps changing")
	g.Eventually(runs.count, timeout).Should(Equal(1))
	g.Expect(runs.get()[0].Sub(lastChange)).To(BeNumerically(">=", time.Second))
	g.Consistently(runs.count, 1500*time.Millisecond).Should(Equal(1), "an idle-only timer runs once per quiet period")
}

func TestInitialDelayPostponesTheFirstRun(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var runs starts
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		runs.add()
		return nil, nil
	}, handlers.ID("late"), handlers.InitialDelayFunc(func(obj *kopfv1.KopfExample) time.Duration { return time.Second }))
	runOperator(t, ns, reg)
	created := time.Now()
	g.Expect(k8s.Create(context.Background(), newExample(ns, "delayed"))).To(Succeed())
	g.Eventually(runs.count, timeout).Should(Equal(1))
	g.Expect(runs.get()[0].Sub(created)).To(BeNumerically(">=", time.Second))
}

func TestDaemonStopsOnDeletionBeforeTheFinalizerIsReleased(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reasons := make(chan handlers.StopReason, 1)
	var returned atomic.Bool
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		<-d.Stopping()
		reasons <- d.StopReason()
		time.Sleep(500 * time.Millisecond) // cleaning up
		returned.Store(true)
		return nil
	}, handlers.ID("worker"), handlers.CancellationBackoff(time.Minute))
	runOperator(t, ns, reg)
	obj := newExample(ns, "daemonised")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	waitFinalizer(g, obj)

	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Eventually(reasons, timeout).Should(Receive(Equal(handlers.StopDeleted)))
	g.Eventually(func() bool { return k8s.Get(ctx, key, obj) != nil }, timeout).Should(BeTrue())
	g.Expect(returned.Load()).To(BeTrue(), "the object went only after the daemon returned")
}

func TestStubbornDaemonIsAbandonedAfterItsTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		<-release // ignores both the stop signal and its context
		return nil
	}, handlers.ID("stubborn"), handlers.CancellationTimeout(500*time.Millisecond))
	runOperator(t, ns, reg)
	obj := newExample(ns, "stubborn")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	waitFinalizer(g, obj)
	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Eventually(func() bool { return k8s.Get(ctx, key, obj) != nil }, timeout).Should(BeTrue(), "gopf gives up on the daemon and releases the object")
}

func TestDaemonFollowsItsFilters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var started atomic.Int32
	reasons := make(chan handlers.StopReason, 4)
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		started.Add(1)
		<-d.Stopping()
		reasons <- d.StopReason()
		return nil
	}, handlers.ID("labelled"), handlers.Labels{"run": "yes"})
	runOperator(t, ns, reg)
	obj := newExample(ns, "filtered")
	obj.Labels = map[string]string{"run": "yes"}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(started.Load, timeout).Should(Equal(int32(1)))

	setLabel := func(v string) {
		g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"run":"`+v+`"}}}`)))).To(Succeed())
	}
	setLabel("no")
	g.Eventually(reasons, timeout).Should(Receive(Equal(handlers.StopFiltersMismatch)))
	setLabel("yes")
	g.Eventually(started.Load, timeout).Should(Equal(int32(2)))
}

func TestReturnedDaemonIsNotRestartedAndShutdownStopsTheOthers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var once atomic.Int32
	reasons := make(chan handlers.StopReason, 1)
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		once.Add(1)
		return nil
	}, handlers.ID("once"))
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		<-ctx.Done() // a daemon may just wait for its context
		reasons <- d.StopReason()
		return nil
	}, handlers.ID("forever"))
	op := runOperator(t, ns, reg)
	obj := newExample(ns, "once")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	g.Eventually(once.Load, timeout).Should(Equal(int32(1)))
	patchSpec(g, obj, `{"field":"poke"}`)
	patchSpec(g, obj, `{"field":"poke again"}`)
	g.Consistently(once.Load, time.Second).Should(Equal(int32(1)))

	g.Expect(op.Stop()).To(Succeed())
	g.Expect(reasons).To(Receive(Equal(handlers.StopOperatorExiting)))
}

func TestTimerWritesAnUnchangedResultOnceWhileReconcilesLag(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	const objects = 4
	reg := handlers.NewRegistry()
	// A slow create handler on one reconcile worker: the reconciles that
	// would show the timer its own write wait behind the other objects'
	// creates, for many of the timer's intervals.
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		time.Sleep(400 * time.Millisecond)
		return map[string]any{"created": true}, nil
	}, handlers.ID("create"))
	var runs starts
	handlers.OnTimer(reg, 100*time.Millisecond, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		runs.add()
		return map[string]any{"state": "steady"}, nil
	}, handlers.ID("tick"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
		o.Requests = &requests
		o.Reconcile.MaxConcurrentReconciles = 1
	})
	var keys []client.ObjectKey
	for i := range objects {
		obj := newExample(ns, fmt.Sprintf("lagging-%d", i))
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(obj))
	}
	for _, key := range keys {
		g.Eventually(func(g Gomega) any { return statusField(g, key) }, timeout).Should(And(
			HaveKeyWithValue("create", map[string]any{"created": true}),
			HaveKeyWithValue("tick", map[string]any{"state": "steady"})))
	}
	g.Eventually(runs.count, timeout).Should(BeNumerically(">=", 10*objects))
	// Per object: the finalizer, the create handler's result with gopf's
	// state, the timer's one result. Every later run returns the same.
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, time.Second).Should(Equal(3*objects), "%v", requests.Snapshot())
}
