package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// countHandled lists the KopfExamples of ns and counts those gopf has
// finished handling and that carry the result of handler id.
func countHandled(g Gomega, ns, id string) int {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExampleList"))
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, item := range list.Items {
		if handled(item.Object) && field(item.Object, "status", id) != nil {
			n++
		}
	}
	return n
}

// maxInWindow returns the largest number of times that fall into any
// window of length w.
func maxInWindow(times []time.Time, w time.Duration) int {
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	best, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func TestAStormOf429sAnd500sIsRiddenOutWithinTheClientsRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("the storm scenario takes 15 s; not part of -short")
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 31)
	// gopf.Main takes its client configuration from ctrl.GetConfig, which
	// (controller-runtime v0.15 and later) turns client-side rate limiting
	// off. Here the operator gets the limits controller-runtime used to set,
	// QPS 20 and burst 30, to see that client-go keeps to them in a storm.
	const qps, burst = 20, 30
	const n, storm, failing = 100, 10 * time.Second, 0.3

	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"name": obj.Name}, nil
	}, handlers.ID("create"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("delete")) // a finalizer: two writes per object
	runOperator(t, throughProxy(px, qps, burst), ns, reg)

	began := time.Now()
	px.SetFaults(faults.Faults{Fraction: failing, Statuses: []int{http.StatusTooManyRequests, http.StatusInternalServerError}, RetryAfter: time.Second})
	names := exampleNames("storm", n)
	for _, name := range names {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	<-time.After(time.Until(began.Add(storm))) // the storm lasts this long
	px.SetFaults(faults.Faults{})
	calm := time.Now()
	g.Eventually(func(g Gomega) int { return countHandled(g, ns, "create") }, timeout).Should(Equal(n))
	done := time.Now()

	// Nothing keeps retrying once everything is handled.
	isWrite := func(r faults.Request) bool {
		res, _ := r.Resource()
		return r.Write() && strings.HasPrefix(res, "kopfexamples")
	}
	countWrites := func() int {
		k := 0
		for _, r := range px.Requests() {
			if isWrite(r) {
				k++
			}
		}
		return k
	}
	settled := countWrites()
	g.Consistently(countWrites, 3*time.Second).Should(Equal(settled), "no retry loop is left behind")

	var writes []time.Time
	perObject := map[string]int{}
	injected := map[int]int{}
	for _, r := range px.Requests() {
		if !isWrite(r) {
			continue
		}
		writes = append(writes, r.At)
		_, name := r.Resource()
		perObject[name]++
		if r.Injected {
			injected[r.Status]++
		}
	}
	// One token bucket per client and kind: in any window of length w at
	// most burst + qps*w writes start; half a second of slack for requests
	// that left the client together but arrived apart.
	peak := maxInWindow(writes, time.Second)
	g.Expect(peak).To(BeNumerically("<=", burst+qps*1.5), "writes in the busiest second")
	span := writes[len(writes)-1].Sub(writes[0])
	g.Expect(float64(len(writes))).To(BeNumerically("<=", burst+qps*(span.Seconds()+0.5)), "writes over %s", span)
	most := 0
	for _, k := range perObject {
		most = max(most, k)
	}
	g.Expect(perObject).To(HaveLen(n))
	g.Expect(most).To(BeNumerically("<=", 25), "attempts for one object are bounded")
	g.Expect(injected[http.StatusTooManyRequests]).To(BeNumerically(">", 0))
	g.Expect(injected[http.StatusInternalServerError]).To(BeNumerically(">", 0))
	dupes := 0
	for _, k := range calls.perObject("create") {
		g.Expect(k).To(BeNumerically(">=", 1))
		dupes += k - 1
	}
	g.Expect(calls.perObject("create")).To(HaveLen(n))

	record(t, "3", outcome{Objects: n, Outcome: "held", Figures: joinf(
		fmt.Sprintf("%d writes (%d injected 429s, %d injected 500s) in %s, busiest second %d (limit %d + %d/s), average %.1f/s",
			len(writes), injected[http.StatusTooManyRequests], injected[http.StatusInternalServerError], seconds(span),
			peak, burst, qps, float64(len(writes))/span.Seconds()),
		fmt.Sprintf("at most %d writes for one object", most),
		fmt.Sprintf("all handled %s after the storm ended (%s after it began), then no writes", seconds(done.Sub(calm)), seconds(done.Sub(began))),
		fmt.Sprintf("%d extra create handler calls after failed state writes", dupes),
	)})
}
