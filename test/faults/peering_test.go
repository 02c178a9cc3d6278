package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

// work is how long the competing operators' handler takes, ignoring its
// context as busy code does.
const work = 300 * time.Millisecond

// exclusivity watches handler calls of several operators and notes every
// time two of them are inside a handler for the same object at once.
type exclusivity struct {
	mu       sync.Mutex
	active   map[string]map[string]int // object → operator → calls in progress
	entered  map[string]int            // calls begun, by operator
	overlaps []string
}

func newExclusivity() *exclusivity {
	return &exclusivity{active: map[string]map[string]int{}, entered: map[string]int{}}
}

func (x *exclusivity) enter(object, by string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for other, n := range x.active[object] {
		if other != by && n > 0 {
			x.overlaps = append(x.overlaps, fmt.Sprintf("%s by %s and %s", object, other, by))
		}
	}
	if x.active[object] == nil {
		x.active[object] = map[string]int{}
	}
	x.active[object][by]++
	x.entered[by]++
}

func (x *exclusivity) leave(object, by string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active[object][by]--
}

// Overlaps returns the overlaps seen so far.
func (x *exclusivity) Overlaps() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.overlaps...)
}

// Entered returns how many handler calls an operator began.
func (x *exclusivity) Entered(by string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.entered[by]
}

// competing is the registry of operator by: a create handler that works for
// a while and notes who handled the object.
func competing(x *exclusivity, calls *callLog, by string) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		x.enter(obj.Name, by)
		defer x.leave(obj.Name, by)
		calls.add(c, by)
		time.Sleep(work) // busy, not waiting: ignores the context
		return map[string]any{"by": by}, nil
	}, handlers.ID("work"))
	return reg
}

// handledBy returns, per operator, the objects whose create handler it ran.
func handledBy(calls *callLog, names []string) map[string][]string {
	out := map[string][]string{}
	for _, name := range names {
		for _, c := range calls.of("work", name) {
			out[c.By] = append(out[c.By], name)
		}
	}
	return out
}

// newPeering creates a KopfPeering in ns and returns the options of an
// operator with a priority in it.
func newPeering(t *testing.T, ns string) func(priority int) func(*envtest.OperatorOptions) {
	t.Helper()
	p := &kopfv1.KopfPeering{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peering"}}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatalf("creating the peering object: %v", err)
	}
	return func(priority int) func(*envtest.OperatorOptions) {
		return func(o *envtest.OperatorOptions) {
			o.Reconcile.Peering = &reconcile.PeeringOptions{
				Name: "peering", Namespace: ns, Priority: priority, Lifetime: 4 * time.Second,
				Identity: fmt.Sprintf("op-%d", priority),
			}
		}
	}
}

// waitPeer waits until the peering object lists identity.
func waitPeer(g Gomega, ns, identity string) {
	p := &kopfv1.KopfPeering{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peering"}}
	g.Expect(envtest.WaitFor(context.Background(), k8s, p, func(p *kopfv1.KopfPeering) bool {
		_, ok := p.Status[identity]
		return ok
	})).To(Succeed())
}

// createAll creates KopfExamples with the given names.
func createAll(g Gomega, ns string, names []string) {
	for _, name := range names {
		g.Expect(k8s.Create(context.Background(), newExample(ns, name))).To(Succeed())
	}
}

// waitAllHandled waits until gopf has handled every named object.
func waitAllHandled(g Gomega, ns string, names []string) {
	for _, name := range names {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, client.ObjectKey{Namespace: ns, Name: name})) }, timeout).Should(BeTrue(), name)
	}
}

func describeHandlers(by map[string][]string) string {
	var parts []string
	for _, op := range sortedKeys(by) {
		parts = append(parts, fmt.Sprintf("%s %d", op, len(by[op])))
	}
	return "handled by " + strings.Join(parts, ", ")
}

func TestWithPeeringOnlyTheHighestPriorityHandles(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	peered := newPeering(t, ns)
	x, calls := newExclusivity(), &callLog{}
	runOperator(t, cfg, ns, competing(x, calls, "high"), peered(20))
	waitPeer(g, ns, "op-20")
	runOperator(t, cfg, ns, competing(x, calls, "low"), peered(10))
	waitPeer(g, ns, "op-10")

	names := exampleNames("peered", 10)
	createAll(g, ns, names)
	waitAllHandled(g, ns, names)
	by := handledBy(calls, names)
	g.Expect(by).To(Equal(map[string][]string{"high": names}))
	g.Expect(x.Overlaps()).To(BeEmpty())
	record(t, "5a", outcome{Objects: len(names), Outcome: "held", Figures: describeHandlers(by) + "; no overlap"})
}

func TestWithPeeringAStoppingOperatorFinishesBeforeTheNextTakesOver(t *testing.T) {
	record(t, "5b", outcome{Objects: 5, Outcome: "held: no object handled by both",
		Figures: "the stopping operator pauses, waits for its running handlers, then leaves the peering; the lower priority takes over after that"})
	g := NewWithT(t)
	ns := newNamespace(t)
	peered := newPeering(t, ns)
	x, calls := newExclusivity(), &callLog{}
	high := runOperator(t, cfg, ns, competing(x, calls, "high"), peered(20))
	waitPeer(g, ns, "op-20")
	runOperator(t, cfg, ns, competing(x, calls, "low"), peered(10))
	waitPeer(g, ns, "op-10")

	names := exampleNames("handover", 5)
	createAll(g, ns, names)
	g.Eventually(func() int { return x.Entered("high") }, timeout).Should(BeNumerically(">", 0))
	_ = high.Stop()
	waitAllHandled(g, ns, names)
	g.Expect(x.Overlaps()).To(BeEmpty(), describeHandlers(handledBy(calls, names)))
}

// peerEntry reads one entry of the peering object in ns.
func peerEntry(g Gomega, ns, identity string) (kopfv1.PeerStatus, bool) {
	p := &kopfv1.KopfPeering{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "peering"}, p)).To(Succeed())
	e, ok := p.Status[identity]
	return e, ok
}

func TestWithPeeringAJoiningHigherPriorityWaitsForTheBusyOperator(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	peered := newPeering(t, ns)
	x, calls := newExclusivity(), &callLog{}
	runOperator(t, cfg, ns, competing(x, calls, "low"), peered(10))
	waitPeer(g, ns, "op-10")

	names := exampleNames("joined", 5)
	createAll(g, ns, names)
	g.Eventually(func() int { return x.Entered("low") }, timeout).Should(BeNumerically(">", 0))
	joined := time.Now()
	runOperator(t, cfg, ns, competing(x, calls, "high"), peered(20))
	waitPeer(g, ns, "op-20")
	// The high operator works once its entry no longer says paused.
	g.Eventually(func(g Gomega) bool {
		e, ok := peerEntry(g, ns, "op-20")
		return ok && !e.Paused
	}, timeout).Should(BeTrue())
	waited := time.Since(joined)
	low, ok := peerEntry(g, ns, "op-10")
	g.Expect(ok && low.Paused && !low.Busy).To(BeTrue(), "the low operator pauses and is idle: %+v", low)

	after := exampleNames("after-join", 3)
	createAll(g, ns, after)
	waitAllHandled(g, ns, append(append([]string{}, names...), after...))
	by := handledBy(calls, append(append([]string{}, names...), after...))
	g.Expect(x.Overlaps()).To(BeEmpty(), describeHandlers(by))
	g.Expect(by["high"]).To(Equal(after), "objects created after the join are the high operator's")
	g.Expect(logs.Find("did not confirm")).To(BeEmpty(), "the joining operator waited for the flags, not for its time limit")
	record(t, "5c", outcome{Objects: len(names) + len(after), Outcome: "held", Figures: fmt.Sprintf(
		"%s; the low operator marked its entry paused and busy until its running handlers returned; the high one started handling %s after it was started (limit 30 s); no overlap",
		describeHandlers(by), seconds(waited))})
}

func TestWithPeeringAnOperatorCutOffIsReplacedAfterItsLifetime(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	peered := newPeering(t, ns)
	x, calls := newExclusivity(), &callLog{}
	px := newProxy(t, 51)
	high := runOperator(t, throughProxy(px, -1, 0), ns, competing(x, calls, "high"), peered(20))
	waitPeer(g, ns, "op-20")
	runOperator(t, cfg, ns, competing(x, calls, "low"), peered(10))
	waitPeer(g, ns, "op-10")
	before := exampleNames("before-cut", 3)
	createAll(g, ns, before)
	waitAllHandled(g, ns, before)

	// The high operator crashes: cut off first, so it cannot leave.
	px.Outage()
	cut := time.Now()
	_ = high.Stop()
	after := exampleNames("after-cut", 3)
	createAll(g, ns, after)
	waitAllHandled(g, ns, after)
	takeover := time.Since(cut)
	by := handledBy(calls, append(append([]string{}, before...), after...))
	g.Expect(by).To(Equal(map[string][]string{"high": before, "low": after}))
	g.Expect(x.Overlaps()).To(BeEmpty())
	// The entry expires after its lifetime (4 s) from its last renewal, at
	// most half a lifetime before the cut.
	g.Expect(takeover).To(BeNumerically("<", 4*time.Second+2*time.Second+10*time.Second))
	record(t, "5d", outcome{Objects: len(before) + len(after), Outcome: "held", Figures: fmt.Sprintf(
		"%s; the low operator took over %s after the cut (lifetime 4 s); no overlap", describeHandlers(by), seconds(takeover))})
}

// elected is a manager with Lease-based leader election running reg in ns:
// what gopf.Main runs with --leader-elect, plus release on cancel.
type elected struct {
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{}
}

func runElected(t *testing.T, c *rest.Config, ns string, reg *handlers.Registry) *elected {
	t.Helper()
	lease, renew, retry := 4*time.Second, 3*time.Second, 500*time.Millisecond
	mgr, err := ctrl.NewManager(c, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		LeaderElection:                true,
		LeaderElectionID:              "faults.gopf.dev",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	if err := reconcile.Setup(mgr, reg, reconcile.Options{}); err != nil {
		t.Fatalf("setting up gopf: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &elected{mgr: mgr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if err := mgr.Start(ctx); err != nil && !strings.Contains(err.Error(), "leader election lost") {
			t.Errorf("the manager stopped: %v", err)
		}
	}()
	t.Cleanup(e.stop)
	return e
}

func (e *elected) stop() {
	e.cancel()
	<-e.done
}

func TestWithLeaderElectionTheNextReplicaStartsOnlyAfterTheLeaderFinished(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	x, calls := newExclusivity(), &callLog{}
	first := runElected(t, cfg, ns, competing(x, calls, "first"))
	g.Eventually(first.mgr.Elected(), timeout).Should(BeClosed())
	second := runElected(t, cfg, ns, competing(x, calls, "second"))

	names := exampleNames("elected", 6)
	createAll(g, ns, names)
	g.Eventually(func() int { return x.Entered("first") }, timeout).Should(BeNumerically(">", 0))
	stopping := time.Now()
	first.stop()
	stopped := time.Since(stopping)
	g.Eventually(second.mgr.Elected(), timeout).Should(BeClosed())
	handover := time.Since(stopping)
	waitAllHandled(g, ns, names)

	by := handledBy(calls, names)
	g.Expect(x.Overlaps()).To(BeEmpty(), describeHandlers(by))
	seen := map[string]int{}
	for _, objs := range by {
		for _, o := range objs {
			seen[o]++
		}
	}
	g.Expect(seen).To(HaveLen(len(names)))
	twice := 0
	for _, k := range seen {
		twice += k - 1
	}
	record(t, "5e", outcome{Objects: len(names), Outcome: "held", Figures: fmt.Sprintf(
		"%s; the leader's stop took %s (its handlers finished first), the other was elected %s after the stop began; no overlap; %d objects handled by both, one after the other, as the leader's results were lost on the way down (see 1e)",
		describeHandlers(by), seconds(stopped), seconds(handover), twice)})
}
