package reconcile_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// counting returns a timer that counts its runs and fails with err.
func counting(n *atomic.Int32, err error) handlers.HandlerFunc[*kopfv1.KopfExample] {
	return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		n.Add(1)
		return nil, err
	}
}

// settles waits until n stops changing and returns its value.
func settles(g Gomega, n *atomic.Int32) int32 {
	var last int32 = -1
	g.Eventually(func() bool {
		cur := n.Load()
		same := cur == last
		last = cur
		return same
	}, timeout, 500*time.Millisecond).Should(BeTrue())
	return last
}

func TestTimersRetryWithinRetriesAndStopWhenAttemptsRunOut(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var runs atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, 100*time.Millisecond, counting(&runs, errors.New("not yet")),
		handlers.ID("flaky"), handlers.Retries(3), handlers.Backoff(50*time.Millisecond))
	runOperator(t, ns, reg)
	obj := newExample(ns, "retried")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	g.Eventually(runs.Load, timeout).Should(BeNumerically(">=", 3))
	g.Expect(settles(g, &runs)).To(Equal(int32(3)), "three attempts, then the timer stops for the object")
	g.Eventually(func(g Gomega) []string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetFinalizers()
	}, timeout).ShouldNot(ContainElement("gopf.dev/finalizer"), "a stopped timer holds no finalizer")
}

func TestATimerStopsOnAPermanentError(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var runs, healthy atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, 100*time.Millisecond, counting(&runs, handlers.Permanent(errors.New("misconfigured"))), handlers.ID("broken"))
	handlers.OnTimer(reg, 100*time.Millisecond, counting(&healthy, nil), handlers.ID("healthy"))
	runOperator(t, ns, reg)
	g.Expect(k8s.Create(context.Background(), newExample(ns, "stopped"))).To(Succeed())

	g.Eventually(healthy.Load, timeout).Should(BeNumerically(">=", 5), "other timers of the object keep running")
	g.Expect(runs.Load()).To(Equal(int32(1)), "the failed timer ran once")
}

func TestATimerFailsWhenItsTimeoutIsOver(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var runs atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, 100*time.Millisecond, counting(&runs, errors.New("still down")),
		handlers.ID("bounded"), handlers.Timeout(time.Second), handlers.Backoff(200*time.Millisecond))
	runOperator(t, ns, reg)
	g.Expect(k8s.Create(context.Background(), newExample(ns, "timed-out"))).To(Succeed())

	g.Eventually(runs.Load, timeout).Should(BeNumerically(">=", 2))
	n := settles(g, &runs)
	g.Expect(n).To(BeNumerically("<=", 5), "attempts 200 ms apart end within the 1 s timeout")
}

func TestDaemonsAreRestartedWithinRetriesAndNotAfterAPermanentError(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var flaky, broken atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		flaky.Add(1)
		return errors.New("lost the connection")
	}, handlers.ID("flaky"), handlers.Retries(2), handlers.Backoff(50*time.Millisecond))
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		broken.Add(1)
		return handlers.Permanent(errors.New("misconfigured"))
	}, handlers.ID("broken"), handlers.Backoff(50*time.Millisecond))
	runOperator(t, ns, reg)
	obj := newExample(ns, "daemons")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	g.Eventually(flaky.Load, timeout).Should(BeNumerically(">=", 2))
	g.Expect(settles(g, &flaky)).To(Equal(int32(2)), "two starts, then the daemon is done for the object")
	g.Expect(broken.Load()).To(Equal(int32(1)), "a permanent error is not restarted")
	g.Eventually(func(g Gomega) []string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetFinalizers()
	}, timeout).ShouldNot(ContainElement("gopf.dev/finalizer"), "finished daemons hold no finalizer")
}
