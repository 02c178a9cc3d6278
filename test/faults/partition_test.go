package faults_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// partitionTick is the interval of the partition scenario's timer.
const partitionTick = 5 * time.Second

// partitionFor is how long the partition scenario cuts the operator off:
// 30 s, the shortest partition the scenario is about, or
// GOPF_FAULTS_PARTITION (a duration such as 120s) for a longer one.
func partitionFor(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("GOPF_FAULTS_PARTITION")
	if v == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 30*time.Second {
		t.Fatalf("GOPF_FAULTS_PARTITION=%q: want a duration of at least 30s", v)
	}
	return d
}

// partitionHandlers registers create, update and delete handlers that hold
// the call for the object named after their cause ("create-mid", ...)
// until cut is closed, after telling inFlight; a timer that returns its
// count (a status write per tick) on the object whose spec.field is
// "timed"; and a daemon, counted in started and stopped, on the one whose
// field is "daemon".
func partitionHandlers(calls *callLog, inFlight chan<- string, cut <-chan struct{}, started, stopped *atomic.Int32) *handlers.Registry {
	reg := handlers.NewRegistry()
	hold := func(c *handlers.Cause, name string) {
		if c.Name == name {
			inFlight <- c.HandlerID
			<-cut
		}
	}
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		hold(c, "create-mid")
		return map[string]any{"field": obj.Spec.Field}, nil
	}, handlers.ID("create"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		hold(c, "update-mid")
		return map[string]any{"field": obj.Spec.Field}, nil
	}, handlers.ID("update"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		hold(c, "delete-mid")
		return nil, nil
	}, handlers.ID("delete"))
	handlers.OnTimer(reg, partitionTick, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return len(calls.of("tick", c.Name)), nil
	}, handlers.ID("tick"), handlers.Field("spec.field"), handlers.Value("timed"))
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], _ *handlers.Cause) error {
		started.Add(1)
		<-d.Stopping()
		stopped.Add(1)
		return nil
	}, handlers.ID("daemon"), handlers.Field("spec.field"), handlers.Value("daemon"))
	return reg
}

// The API server is unreachable for 30 s or more while every phase is
// under way: a create, an update and a delete handler in flight (their
// outcomes must be written through the partition), a timer ticking, a
// daemon running; meanwhile an object is created, one changed and one
// deleted. Afterwards everything is handled, every change handler was
// called once per cause, the daemon never restarted, and the operator's
// retries during the partition stayed far below its client rate limit. A
// timer's tick whose result cannot be written has run: its write is sent
// again after the timer's backoff, and the timer is not called again until
// it is written.
func TestAPartitionInTheMiddleOfEveryPhaseIsHandledOnceWithBoundedRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("the partition lasts 30 s or more")
	}
	partition := partitionFor(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 42)
	var calls callLog
	var started, stopped atomic.Int32
	inFlight, cut := make(chan string, 3), make(chan struct{})
	reg := partitionHandlers(&calls, inFlight, cut, &started, &stopped)
	op := runOperator(t, throughProxy(px, 20, 30), ns, reg)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	updated := func(name string) func(g Gomega) any {
		return func(g Gomega) any { return field(rawObject(g, key(name)), "status", "update", "field") }
	}

	settled := []string{"update-mid", "update-gap", "delete-mid", "delete-gap", "timed", "daemon"}
	for _, name := range settled {
		obj := newExample(ns, name)
		if name == "timed" || name == "daemon" {
			obj.Spec.Field = name
		}
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	for _, name := range settled {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue(), "%s", name)
	}
	g.Eventually(started.Load, timeout).Should(BeEquivalentTo(1), "the daemon runs")
	g.Eventually(func() []call { return calls.of("tick", "timed") }, timeout).ShouldNot(BeEmpty(), "the timer ticks")

	// A create, an update and a delete handler are in flight when the
	// partition begins: they return into it.
	g.Expect(k8s.Create(ctx, newExample(ns, "create-mid"))).To(Succeed())
	patchField(g, ns, "update-mid", "changed before the partition")
	g.Expect(k8s.Delete(ctx, newExample(ns, "delete-mid"))).To(Succeed())
	var holding []string
	for range 3 {
		var h string
		g.Eventually(inFlight, timeout).Should(Receive(&h))
		holding = append(holding, h)
	}
	g.Expect(holding).To(ConsistOf("create", "update", "delete"))
	px.Outage()
	began := time.Now()
	close(cut)
	g.Expect(k8s.Create(ctx, newExample(ns, "create-gap"))).To(Succeed())
	patchField(g, ns, "update-gap", "changed during the partition")
	g.Expect(k8s.Delete(ctx, newExample(ns, "delete-gap"))).To(Succeed())
	<-time.After(partition) // the fault lasts this long
	px.Restore()
	restored := time.Now()

	// client-go's reflectors back off up to 30 s (jittered up to twice
	// that), the work queue per object from 5 ms doubling: recovery waits
	// for the next attempt of each.
	recovery := 2 * timeout
	for _, name := range []string{"create-mid", "create-gap"} {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, recovery).Should(BeTrue(), "%s", name)
	}
	g.Eventually(updated("update-mid"), recovery).Should(Equal("changed before the partition"))
	g.Eventually(updated("update-gap"), recovery).Should(Equal("changed during the partition"))
	for _, name := range []string{"delete-mid", "delete-gap"} {
		g.Expect(envtest.WaitGone(ctx, k8s, newExample(ns, name))).To(Succeed(), "%s", name)
	}
	g.Eventually(func(g Gomega) any { return field(rawObject(g, key("timed")), "status", "tick") }, recovery).
		Should(BeNumerically(">=", len(calls.of("tick", "timed"))), "a tick after the partition is stored")
	handledIn := time.Since(restored)

	for _, name := range append(settled, "create-mid", "create-gap") {
		g.Expect(calls.of("create", name)).To(HaveLen(1), "create calls of %s", name)
	}
	for _, name := range []string{"update-mid", "update-gap"} {
		g.Expect(calls.of("update", name)).To(HaveLen(1), "update calls of %s", name)
	}
	for _, name := range []string{"delete-mid", "delete-gap"} {
		g.Expect(calls.of("delete", name)).To(HaveLen(1), "delete calls of %s", name)
	}
	g.Expect(calls.count("update")).To(Equal(2), "no other update handler ran")
	g.Expect(calls.count("delete")).To(Equal(2), "no other delete handler ran")
	ticks := timerCallsDuring(&calls, began, restored)
	g.Expect(ticks).NotTo(BeEmpty(), "the timer was due during the partition")
	g.Expect(ticks).To(HaveLen(1), "a tick whose result was not written is written again, not called again")
	g.Expect(started.Load()).To(BeEquivalentTo(1), "the daemon was started once")
	g.Expect(stopped.Load()).To(BeZero(), "the daemon ran through the partition")
	g.Expect(op.Done()).NotTo(BeClosed(), "the same operator recovered, without a restart")

	attempts := attemptsDuring(px, began, restored)
	rate := float64(len(attempts)) / restored.Sub(began).Seconds()
	// The bound, from the backoffs: the work queue retries each of the
	// three objects whose write failed after 5 ms, doubling (14 attempts in
	// 30 s, 16 in 120 s); client-go's reflectors relist each watch after
	// 0.8 s, doubling up to 30 s (jittered); the timer's tick sends its
	// write once per backoff (1 s in envtest). About 90 attempts in 30 s, 3 a
	// second, falling as the partition lasts; 5 a second leaves room for
	// Events and a loaded machine, and is a quarter of the client's rate
	// limit (QPS 20), which a retry loop would fill.
	g.Expect(rate).To(BeNumerically("<=", 5), "requests a second during the partition")
	record(t, "2g", outcome{Objects: 8, Outcome: "held", Figures: fmt.Sprintf(
		"cut off for %s: %d requests tried meanwhile, %.1f a second (the busiest second %d, the last 10 s %d; client limit 20/s); "+
			"the timer's tick due in the partition was called once, its result sent again after each backoff (%s in envtest, 60 s by default) "+
			"until written; everything handled %s after the API server came back",
		seconds(partition), len(attempts), rate, busiestSecond(attempts), countSince(attempts, restored.Add(-10*time.Second)),
		seconds(envtest.DefaultBackoff), seconds(handledIn))})
}

// timerCallsDuring returns the calls of the timer between from and to.
func timerCallsDuring(calls *callLog, from, to time.Time) []call {
	var out []call
	for _, c := range calls.of("tick", "timed") {
		if !c.At.Before(from) && c.At.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// attemptsDuring returns when the operator tried a request between from and
// to: the connections the proxy refused, and requests it saw (those in
// flight when the partition began).
func attemptsDuring(px *faults.Proxy, from, to time.Time) []time.Time {
	var out []time.Time
	for _, at := range px.Refused() {
		if !at.Before(from) && at.Before(to) {
			out = append(out, at)
		}
	}
	for _, r := range px.Requests() {
		if !r.At.Before(from) && r.At.Before(to) {
			out = append(out, r.At)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// busiestSecond returns the most of times within one second.
func busiestSecond(times []time.Time) int {
	most := 0
	for i, start := range times {
		n := 0
		for _, at := range times[i:] {
			if at.Sub(start) >= time.Second {
				break
			}
			n++
		}
		most = max(most, n)
	}
	return most
}

// countSince counts the times at or after from.
func countSince(times []time.Time, from time.Time) int {
	n := 0
	for _, at := range times {
		if !at.Before(from) {
			n++
		}
	}
	return n
}
