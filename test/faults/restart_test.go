package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// The operator is stopped the way a killed process stops: the proxy first
// cuts it off from the API server (so whatever it writes on the way down
// never lands), then its manager stops. A new operator, with nothing in
// memory, takes over through the same proxy.
func TestAnOperatorStoppedMidHandlerResumesFromStoredProgress(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 11)
	const sleep = 4 * time.Second // the retrying handler's TemporaryError delay

	var calls callLog
	var mu sync.Mutex
	blocked := map[string]bool{}                           // objects whose handler blocked once already
	entered := make(chan string, 4)                        // a handler started blocking, for this object
	sawObject := map[string]bool{}                         // a delete handler found its object in the API server
	lateCalls := 0                                         // calls made after the operator's stop had begun
	block := func(ctx context.Context, name string) bool { // reports whether it blocked
		mu.Lock()
		first := !blocked[name]
		blocked[name] = true
		mu.Unlock()
		if first {
			entered <- name
			<-ctx.Done() // held until the operator stops
		}
		return first
	}
	newRegistry := func(by string) *handlers.Registry {
		reg := handlers.NewRegistry()
		late := func(ctx context.Context) {
			if ctx.Err() != nil {
				mu.Lock()
				lateCalls++
				mu.Unlock()
			}
		}
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			calls.add(c, by) // the side effect: every call counts
			late(ctx)
			switch {
			case obj.Name == "interrupted" && c.Retry == 0:
				return nil, handlers.Temporary(errors.New("not ready yet"), 100*time.Millisecond)
			case obj.Name == "interrupted" && c.Retry == 1 && block(ctx, obj.Name):
				return nil, ctx.Err()
			case obj.Name == "sleeping" && c.Retry < 2:
				return nil, handlers.Temporary(errors.New("not ready yet"), sleep)
			}
			return map[string]any{"attempts": c.Retry + 1}, nil
		}, handlers.ID("provision"))
		handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			calls.add(c, by)
			late(ctx)
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &kopfv1.KopfExample{})
			mu.Lock()
			sawObject[obj.Name+"/"+by] = err == nil
			mu.Unlock()
			if obj.Name == "interrupted-delete" && block(ctx, obj.Name) {
				return nil, ctx.Err()
			}
			return nil, nil
		}, handlers.ID("deprovision"))
		return reg
	}
	opCfg := throughProxy(px, 20, 30)
	first := runOperator(t, opCfg, ns, newRegistry("first"))

	names := []string{"interrupted", "sleeping", "doomed", "interrupted-delete"}
	for _, name := range names {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	for _, name := range []string{"doomed", "interrupted-delete"} {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue())
	}
	g.Expect(k8s.Delete(ctx, newExample(ns, "interrupted-delete"))).To(Succeed())
	blocking := map[string]bool{}
	g.Eventually(func() map[string]bool {
		select {
		case name := <-entered:
			blocking[name] = true
		default:
		}
		return blocking
	}, timeout).Should(Equal(map[string]bool{"interrupted": true, "interrupted-delete": true}))
	// The retrying handler has failed twice and waits: its progress is stored.
	var delayed time.Time
	g.Eventually(func(g Gomega) {
		obj := rawObject(g, key("sleeping"))
		g.Expect(field(obj, "status", "gopf", "progress", "provision", "retries")).To(BeNumerically("==", 2))
		at, err := time.Parse(time.RFC3339Nano, field(obj, "status", "gopf", "progress", "provision", "delayed").(string))
		g.Expect(err).NotTo(HaveOccurred())
		delayed = at
	}, timeout).Should(Succeed())

	px.Outage()
	_ = first.Stop() // errors are expected: nothing reaches the API server
	g.Expect(time.Now()).To(BeTemporally("<", delayed), "the operator stopped while the retrying handler waited")
	g.Expect(calls.retries("provision", "sleeping")).To(Equal([]int{0, 1}))
	// Deleted while no operator runs: the finalizer holds the object.
	g.Expect(k8s.Delete(ctx, newExample(ns, "doomed"))).To(Succeed())
	px.Restore()
	restarted := time.Now()
	runOperator(t, opCfg, ns, newRegistry("second"))

	took := map[string]time.Duration{} // from the restart until the object was handled or gone
	for _, name := range []string{"interrupted", "doomed", "interrupted-delete", "sleeping"} {
		if strings.HasPrefix(name, "interrupted-") || name == "doomed" {
			g.Expect(envtest.WaitGone(ctx, k8s, newExample(ns, name))).To(Succeed())
		} else {
			g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue(), name)
		}
		took[name] = time.Since(restarted)
	}

	// A stopping operator may still start a reconcile or two, with its
	// context already cancelled (controller-runtime requeues a failed
	// reconcile before its queue shuts down); those calls fail and leave
	// no trace, like the interrupted ones. What the new operator does is
	// what counts.
	mu.Lock()
	late := lateCalls
	for key, saw := range sawObject {
		g.Expect(saw).To(BeTrue(), "a delete handler ran after its object was gone: %s", key)
	}
	g.Expect(sawObject).To(HaveKey("doomed/second"))
	g.Expect(sawObject).To(HaveKey("interrupted-delete/second"))
	mu.Unlock()
	lateNote := ""
	if late > 0 {
		lateNote = fmt.Sprintf(" (plus %d call(s) the stopping operator made with its context already cancelled)", late)
	}

	// 1a: the interrupted attempt left no trace, so the new operator runs
	// it again with the same retry number; the retry before it counts.
	byFirst := calls.retriesBy("provision", "interrupted", "first")
	g.Expect(len(byFirst)).To(BeNumerically(">=", 2))
	g.Expect(byFirst[:2]).To(Equal([]int{0, 1}))
	g.Expect(calls.retriesBy("provision", "interrupted", "second")).To(Equal([]int{1}))
	g.Expect(field(rawObject(g, key("interrupted")), "status", "provision", "attempts")).To(BeNumerically("==", 2))
	record(t, "1a", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"attempts seen by the handler: retry 0, 1 (interrupted), then retry 1 again by the new operator%s; handled %s after the restart", lateNote, seconds(took["interrupted"]))})

	// 1b: the retry count and the time of the next attempt came from the
	// stored progress.
	g.Expect(calls.retriesBy("provision", "sleeping", "first")).To(Equal([]int{0, 1}))
	g.Expect(calls.retriesBy("provision", "sleeping", "second")).To(Equal([]int{2}))
	sleeping := calls.of("provision", "sleeping")[2]
	g.Expect(sleeping.At).To(BeTemporally(">=", delayed.Add(-time.Second)), "not before the stored time (stored with 1 s precision at worst)")
	record(t, "1b", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"the new operator's first call had retry 2, %s after the stored due time", seconds(sleeping.At.Sub(delayed)))})

	// 1c and 1d: delete handlers ran, while the object was still there,
	// before it went: once by the new operator.
	g.Expect(calls.retriesBy("deprovision", "doomed", "first")).To(BeEmpty())
	g.Expect(calls.retriesBy("deprovision", "doomed", "second")).To(HaveLen(1))
	g.Expect(calls.retriesBy("deprovision", "interrupted-delete", "first")).NotTo(BeEmpty())
	g.Expect(calls.retriesBy("deprovision", "interrupted-delete", "second")).To(HaveLen(1))
	err := k8s.Get(ctx, key("doomed"), &kopfv1.KopfExample{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	record(t, "1c", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"the delete handler ran once, by the new operator, with the object still there; gone %s after the restart", seconds(took["doomed"]))})
	record(t, "1d", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"the delete handler ran again after the restart, with the object still there%s; gone %s after the restart", lateNote, seconds(took["interrupted-delete"]))})

	// The objects handled before the stop were not handled again.
	g.Expect(calls.perObject("provision")).To(And(HaveKeyWithValue("doomed", 1), HaveKeyWithValue("interrupted-delete", 1)))
}

// A graceful stop waits for running reconciles to return. A handler that
// finishes its work during the stop should have its outcome stored, or it
// runs again after the restart.
func TestAGracefulStopKeepsTheOutcomeOfAHandlerThatFinishes(t *testing.T) {
	record(t, "1e", outcome{Objects: 1, Outcome: "held: the outcome is written although the manager is stopping",
		Figures: "writes of a reconcile outlive the manager's context (bounded at 10 s); the new operator does not call the handler again"})
	g := NewWithT(t)
	ns := newNamespace(t)
	var calls callLog
	entered := make(chan struct{}, 1)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		if c.Retry == 0 && len(calls.of("provision", obj.Name)) == 1 {
			entered <- struct{}{}
			<-ctx.Done() // the work is done by the time the stop is noticed
		}
		return map[string]any{"done": true}, nil
	}, handlers.ID("provision"))
	op := runOperator(t, cfg, ns, reg)
	g.Expect(k8s.Create(context.Background(), newExample(ns, "finishing"))).To(Succeed())
	g.Eventually(entered, timeout).Should(Receive())
	g.Expect(op.Stop()).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "finishing"}
	g.Expect(isTrue(field(rawObject(g, key), "status", "provision", "done"))).To(BeTrue(), "the result was stored on the way down")
	runOperator(t, cfg, ns, reg)
	g.Consistently(func() int { return len(calls.of("provision", "finishing")) }, 2*time.Second).Should(Equal(1))
}
