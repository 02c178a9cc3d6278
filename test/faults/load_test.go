package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// defaultLoadSize is the number of objects the load scenario creates unless
// GOPF_FAULTS_N says otherwise: small enough for `make test`.
const defaultLoadSize = 300

// loadSize is the number of objects the load scenario creates.
func loadSize() int {
	if n, err := strconv.Atoi(os.Getenv("GOPF_FAULTS_N")); err == nil && n > 0 {
		return n
	}
	return defaultLoadSize
}

func TestABurstOfObjectsIsHandledCompletelyWhileRequestsFail(t *testing.T) {
	if testing.Short() {
		t.Skip("the load scenario is not part of -short")
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 71)
	n := loadSize()

	var mu sync.Mutex
	effects := map[string]int{} // what the create handler did, by object
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		effects[obj.Name]++
		return map[string]any{"provisioned": true}, nil
	}, handlers.ID("provision"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("deprovision")) // a finalizer: two writes per object
	// The client configuration gopf.Main has: no client-side rate limit.
	runOperator(t, throughProxy(px, -1, 0), ns, reg)

	px.SetFaults(faults.Faults{Fraction: 0.2, Statuses: []int{http.StatusTooManyRequests, http.StatusInternalServerError}, RetryAfter: time.Second})
	began := time.Now()
	names := exampleNames("load", n)
	work := make(chan string)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := k8s.Create(ctx, newExample(ns, name)); err != nil {
					t.Errorf("creating %s: %v", name, err)
				}
			}
		}()
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	created := time.Since(began)

	limit := timeout + time.Duration(n)*40*time.Millisecond
	g.Eventually(func(g Gomega) int { return countHandled(g, ns, "provision") }, limit, time.Second).Should(Equal(n))
	done := time.Since(began)
	px.SetFaults(faults.Faults{})

	mu.Lock()
	calls, dupes, most := 0, 0, 0
	for _, name := range names {
		k := effects[name]
		g.Expect(k).To(BeNumerically(">=", 1), name)
		calls += k
		dupes += k - 1
		most = max(most, k)
	}
	mu.Unlock()
	requests, injected := 0, map[int]int{}
	for _, r := range px.Requests() {
		if res, _ := r.Resource(); r.Write() && strings.HasPrefix(res, "kopfexamples") {
			requests++
			if r.Injected {
				injected[r.Status]++
			}
		}
	}
	figures := joinf(
		fmt.Sprintf("%d objects created in %s, all handled to completion %s after the first (%.0f objects/s)", n, seconds(created), seconds(done), float64(n)/done.Seconds()),
		fmt.Sprintf("%d writes by the operator, %d failed with 429 and %d with 500", requests, injected[http.StatusTooManyRequests], injected[http.StatusInternalServerError]),
		fmt.Sprintf("%d create handler calls: %d objects handled more than once (at most %d times)", calls, countOver(effects, 1), most),
	)
	record(t, "7a", outcome{Objects: n, Outcome: "held", Figures: figures})
	recordLoad(loadRun{Objects: n, Race: raceEnabled, Figures: figures})

	t.Run("each object's create handler runs exactly once", func(t *testing.T) {
		record(t, "7b", outcome{Objects: n, Outcome: "held: every create handler ran exactly once", Figures: fmt.Sprintf(
			"%d of %d objects got more than one create handler call; outcomes of failed writes are kept in memory and written by the next reconcile", countOver(effects, 1), n)})
		g := NewWithT(t)
		g.Expect(dupes).To(BeZero())
	})
}

// countOver counts the entries of m above k.
func countOver(m map[string]int, k int) int {
	c := 0
	for _, v := range m {
		if v > k {
			c++
		}
	}
	return c
}
