package reconcile_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/handlers/objects"
	"github.com/gopf-dev/gopf/reconcile"
)

// The guarantees of sharding (docs/sharding.md), one test each, with two
// shards of test-ring in one namespace.

// labelsOf reads the labels of a KopfExample from the API server.
func labelsOf(g Gomega, key types.NamespacedName) map[string]string {
	obj := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj.Labels
}

// changeSpec changes spec.items of a KopfExample: an update to handle.
func changeSpec(g Gomega, key types.NamespacedName, items ...string) {
	obj := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Items = items
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
}

// A drain that arrives while a handler runs waits for it: the shard keeps
// the object's labels until the handler has returned and its outcome is on
// the object; then it lets go. The next shard goes on from the progress:
// the create handler that had finished is not run again, the one that
// asked for a retry is retried there as its second attempt.
func TestADrainWaitsForTheHandlerInFlightAndTheNextShardGoesOnFromItsProgress(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var calls shardCalls
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	var retries sync.Map // shard → the Retry slow_fn saw
	for _, name := range []string{"shard-a", "shard-b"} {
		reg := handlers.NewRegistry()
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			calls.add(name, "first", obj.Name)
			return "first by " + name, nil
		}, handlers.ID("first_fn"))
		handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			calls.add(name, "slow", obj.Name)
			retries.Store(name, c.Retry)
			if name == "shard-a" {
				close(started)
				<-release
				return nil, handlers.Temporary(errors.New("not yet"), time.Second)
			}
			return "slow by " + name, nil
		}, handlers.ID("slow_fn"))
		runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
			o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: name, Namespace: ns, ExternalAssigner: true}
		})
	}

	key := createOnShard(g, ns, "inflight", "shard-a")
	g.Eventually(started, timeout).Should(BeClosed())
	setLabels(g, key, map[string]string{drainLabel: "true"})
	g.Consistently(func(g Gomega) map[string]string { return labelsOf(g, key) }, settle, 100*time.Millisecond).
		Should(And(HaveKeyWithValue(shardLabel, "shard-a"), HaveKey(drainLabel)), "the shard let go while its handler ran")

	releaseOnce.Do(func() { close(release) })
	g.Eventually(func(g Gomega) map[string]string { return labelsOf(g, key) }, timeout).
		ShouldNot(Or(HaveKey(shardLabel), HaveKey(drainLabel)), "the drain was never acknowledged")
	g.Expect(statusField(g, key, "first_fn")).To(Equal("first by shard-a"))
	g.Expect(statusField(g, key, "gopf", "progress", "slow_fn", "retries")).To(BeNumerically("==", 1), "the retry of the handler in flight was not recorded")
	g.Expect(statusField(g, key, "gopf", "lastHandled")).To(BeNil(), "the create cause is not finished")

	setLabels(g, key, map[string]string{shardLabel: "shard-b"})
	g.Eventually(func(g Gomega) any { return statusField(g, key, "slow_fn") }, timeout).Should(Equal("slow by shard-b"))
	waitHandled(g, key)
	g.Expect(calls.of("inflight")).To(Equal([]string{"shard-a first", "shard-a slow", "shard-b slow"}))
	r, _ := retries.Load("shard-b")
	g.Expect(r).To(Equal(1), "the next shard did not go on with the handler's count")
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cutOff returns a copy of the test's rest.Config whose requests fail
// while cut is set: a process partitioned from the API server.
func cutOff(cut *atomic.Bool) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("cut off from the API server")
			}
			return rt.RoundTrip(r)
		})
	})
	return c
}

// recordingRegistry has create and update handlers that record which
// shard called them.
func recordingRegistry(shard string, calls *shardCalls) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(shard, "create", obj.Name)
		return "created by " + shard, nil
	}, handlers.ID("create_fn"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(shard, "update", obj.Name)
		return nil, nil
	}, handlers.ID("update_fn"))
	return reg
}

// A shard that stops renewing its Lease without releasing it (its process
// cut off from the API server) is taken for dead once its Lease has
// expired for a lease duration: the assigner of the other shard claims the
// Lease and moves its objects at once; the live shard handles them from
// their stored state (no create again), and the cut-off shard, unable to
// renew, stops by itself.
func TestTheObjectsOfAShardThatStopsRenewingItsLeaseMoveToTheLiveShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls shardCalls
	runOperator(t, ns, recordingRegistry("shard-b", &calls), func(o *envtest.OperatorOptions) {
		o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: "shard-b", Namespace: ns}
	})
	g.Eventually(func(g Gomega) string {
		lease := &coordinationv1.Lease{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "test-ring-assigner"}, lease)).To(Succeed())
		return *lease.Spec.HolderIdentity
	}, timeout).ShouldNot(BeEmpty(), "shard-b never became the assigner")
	// Created before shard-a joins, the objects are spread by the pass its
	// joining starts, rather than at the assigner's next periodic one.
	var keys []types.NamespacedName
	for _, name := range []string{"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11"} {
		obj := newExample(ns, name)
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(obj))
	}
	var cut atomic.Bool
	a, err := envtest.RunOperator(ctx, cutOff(&cut), recordingRegistry("shard-a", &calls), envtest.OperatorOptions{
		Scheme: scheme, Namespaces: []string{ns},
		Reconcile: reconcile.Options{Sharding: &reconcile.Sharding{Ring: "test-ring", Shard: "shard-a", Namespace: ns, ExternalAssigner: true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		cut.Store(false)
		_ = a.Stop() // it has stopped by itself: the error is its lost Lease
	})

	var onA []types.NamespacedName
	for _, key := range keys {
		waitHandled(g, key)
		g.Eventually(func(g Gomega) map[string]string { return labelsOf(g, key) }, timeout).
			Should(And(HaveKey(shardLabel), Not(HaveKey(drainLabel))), "%s was never assigned", key.Name)
		if labelsOf(g, key)[shardLabel] == "shard-a" {
			onA = append(onA, key)
		}
	}
	g.Expect(onA).NotTo(BeEmpty(), "the assigner gave shard-a nothing")

	// shard-a goes silent; the test plays the time it takes its Lease to
	// expire by moving the last renewal back by three lease durations.
	cut.Store(true)
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shard-a"}, lease)).To(Succeed())
	g.Expect(*lease.Spec.HolderIdentity).To(Equal("shard-a"))
	past := metav1.NewMicroTime(time.Now().Add(-3 * time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second))
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &past, &past
	g.Expect(k8s.Update(ctx, lease)).To(Succeed())

	for _, key := range onA {
		g.Eventually(func(g Gomega) string { return labelsOf(g, key)[shardLabel] }, timeout).
			Should(Equal("shard-b"), "%s never left the dead shard", key.Name)
	}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
	g.Expect(*lease.Spec.HolderIdentity).NotTo(Equal("shard-a"), "the assigner moved the objects without claiming the Lease")
	changeSpec(g, onA[0], "changed")
	g.Eventually(func() []string { return calls.of(onA[0].Name) }, timeout).Should(ContainElement("shard-b update"))
	for _, key := range keys {
		creates := 0
		for _, c := range calls.of(key.Name) {
			if strings.HasSuffix(c, " create") {
				creates++
			}
		}
		g.Expect(creates).To(Equal(1), "create handler calls of %s: %v", key.Name, calls.of(key.Name))
	}
	g.Eventually(a.Done(), timeout).Should(BeClosed(), "the cut-off shard did not stop once it could not renew its Lease")
	g.Expect(a.Err()).To(MatchError(ContainSubstring("lost its Lease")))
}

// A level handler's children made with objects.Adopt carry the owner's
// shard label, so they are in the owner's shard's cache: a change of a
// child reconciles the owner there, and on no other shard. A child without
// the label is in no shard's cache, and its changes reconcile nothing.
func TestChildrenCarryTheirOwnersShardAndAreWatchedByItOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls shardCalls
	for _, name := range []string{"shard-a", "shard-b"} {
		reg := handlers.NewRegistry()
		handlers.OnReconcile(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (ctrlreconcile.Result, error) {
			calls.add(name, "reconcile", obj.Name)
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: obj.Name + "-child"}}
			if err := objects.Adopt(obj, child); err != nil {
				return ctrlreconcile.Result{}, err
			}
			if err := c.Client.Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrlreconcile.Result{}, err
			}
			return ctrlreconcile.Result{}, nil
		}, handlers.ID("children"), handlers.Owns(&corev1.ConfigMap{}))
		runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
			o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: name, Namespace: ns, ExternalAssigner: true}
		})
	}
	parent := createOnShard(g, ns, "parent", "shard-a")
	createOnShard(g, ns, "other", "shard-b")
	child := &corev1.ConfigMap{}
	for owner, shard := range map[string]string{"parent": "shard-a", "other": "shard-b"} {
		g.Eventually(func(g Gomega) map[string]string {
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: owner + "-child"}, child)).To(Succeed())
			return child.Labels
		}, timeout).Should(HaveKeyWithValue(shardLabel, shard), "the child of %s", owner)
	}
	g.Expect(child.Labels).NotTo(HaveKey(drainLabel))

	// A child of parent without the shard label, as a user might make it.
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray"}}
	owner := &kopfv1.KopfExample{}
	g.Expect(k8s.Get(ctx, parent, owner)).To(Succeed())
	owner.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	g.Expect(objects.Adopt(owner, stray)).To(Succeed())
	delete(stray.Labels, shardLabel)
	g.Expect(k8s.Create(ctx, stray)).To(Succeed())

	reconciles := func() int { return len(calls.of("parent")) }
	var last int
	g.Eventually(func() bool { n := reconciles(); same := n == last; last = n; return same }, timeout, 500*time.Millisecond).
		Should(BeTrue(), "the parent's reconciles never settled")
	touch := func(name string) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Data = map[string]string{"touched": time.Now().String()}
		g.Expect(k8s.Patch(ctx, cm, patch)).To(Succeed())
	}
	touch("stray")
	g.Consistently(reconciles, settle, 100*time.Millisecond).Should(Equal(last), "a child outside the shard's cache reconciled its owner")
	touch("parent-child")
	g.Eventually(reconciles, timeout).Should(BeNumerically(">", last), "a change of the child did not reconcile its owner")
	for _, c := range calls.of("parent") {
		g.Expect(c).To(Equal("shard-a reconcile"))
	}
	for _, c := range calls.of("other") {
		g.Expect(c).To(Equal("shard-b reconcile"))
	}
}

// A shard's cache holds only its objects: the watch events a shard's
// handlers see are those of the objects labelled for it, never another
// shard's or an unassigned one's, until an object is labelled for it.
func TestAShardSeesOnlyItsOwnObjects(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var seen shardCalls // object → "shard event" for every event
	for _, name := range []string{"shard-a", "shard-b"} {
		reg := handlers.NewRegistry()
		handlers.OnEvent(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) error {
			seen.add(name, string(c.Event), obj.Name)
			return nil
		}, handlers.ID("events"))
		runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
			o.Reconcile.Sharding = &reconcile.Sharding{Ring: "test-ring", Shard: name, Namespace: ns, ExternalAssigner: true}
		})
	}
	keys := map[string]types.NamespacedName{
		"shard-a": createOnShard(g, ns, "mine-a", "shard-a"),
		"shard-b": createOnShard(g, ns, "mine-b", "shard-b"),
		"":        createOnShard(g, ns, "nobodys", ""),
	}
	for shard, key := range keys {
		changeSpec(g, key, "changed")
		if shard != "" {
			g.Eventually(func() int { return len(seen.of(key.Name)) }, timeout).Should(BeNumerically(">=", 2), "%s saw too little of %s", shard, key.Name)
		}
	}
	onlyBy := func(shard string) OmegaMatcher { return HaveEach(HavePrefix(shard + " ")) }
	g.Consistently(func() [][]string { return [][]string{seen.of("mine-a"), seen.of("mine-b"), seen.of("nobodys")} }, settle, 100*time.Millisecond).
		Should(SatisfyAll(
			WithTransform(func(s [][]string) []string { return s[0] }, onlyBy("shard-a")),
			WithTransform(func(s [][]string) []string { return s[1] }, onlyBy("shard-b")),
			WithTransform(func(s [][]string) []string { return s[2] }, BeEmpty()),
		), "a shard saw an object that is not its own")

	setLabels(g, keys[""], map[string]string{shardLabel: "shard-b"})
	g.Eventually(func() []string { return seen.of("nobodys") }, timeout).Should(ContainElement(HavePrefix("shard-b ")))
	g.Expect(seen.of("nobodys")).To(onlyBy("shard-b"))
}
