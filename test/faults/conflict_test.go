package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// The other writer's marks on the objects it shares with the operator.
const (
	otherFinalizer  = "other.example.com/hold"
	otherAnnotation = "other.example.com/seq"
	gopfFinalizer   = "gopf.dev/finalizer"
)

func TestAnotherWriterLosesNothingAndMakesTheOperatorLoseNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 41)
	px.SetFaults(faults.Faults{Fraction: 0.1, Statuses: []int{http.StatusConflict}, Match: func(r *http.Request) bool {
		return r.Method == http.MethodPatch || r.Method == http.MethodPut
	}})
	const n, rounds = 10, 8
	last := "v" + strconv.Itoa(rounds-1)

	var calls callLog
	var mu sync.Mutex
	lastData := map[string]string{} // the data each ConfigMap's handlers last saw
	noteData := func(obj *corev1.ConfigMap) {
		mu.Lock()
		defer mu.Unlock()
		lastData[obj.Name] = obj.Data["v"]
	}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"created": true}, nil
	}, handlers.ID("create"))
	handlers.OnUpdate(reg, calls.recording(), handlers.ID("update"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("delete"))
	shared := handlers.Labels{"faults": "shared"}
	handlers.OnCreate(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		noteData(obj)
		return nil, nil
	}, handlers.ID("cm_create"), shared)
	handlers.OnUpdate(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		noteData(obj)
		return nil, nil
	}, handlers.ID("cm_update"), shared)
	handlers.OnDelete(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("cm_delete"), shared)
	runOperator(t, throughProxy(px, -1, 0), ns, reg)

	examples, maps := exampleNames("shared", n), exampleNames("shared-cm", n)

	// The other writer creates each object, then goes through rounds of
	// read-modify-write with optimistic concurrency (retried on conflict)
	// and status merge patches.
	var conflicts atomic.Int64
	// think is how long the other writer holds an object it read before it
	// writes it back: long enough for the operator to write in between.
	update := func(obj client.Object, think time.Duration, change func()) error {
		return retry.RetryOnConflict(wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5}, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			<-time.After(think)
			change()
			err := k8s.Update(ctx, obj)
			if apierrors.IsConflict(err) {
				conflicts.Add(1)
			}
			return err
		})
	}
	mark := func(obj client.Object, i int) {
		controllerutil.AddFinalizer(obj, otherFinalizer)
		labels, annotations := obj.GetLabels(), obj.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		labels["churn"], annotations[otherAnnotation] = strconv.Itoa(i), strconv.Itoa(i)
		obj.SetLabels(labels)
		obj.SetAnnotations(annotations)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n*(2+3*rounds))
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), 41))
			errs <- k8s.Create(ctx, newExample(ns, examples[k]))
			errs <- k8s.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: maps[k], Labels: map[string]string{"faults": "shared"}},
				Data:       map[string]string{"v": "initial"},
			})
			for i := range rounds {
				ex := newExample(ns, examples[k])
				errs <- update(ex, time.Duration(rng.IntN(100))*time.Millisecond, func() { mark(ex, i); ex.Spec.Field = "v" + strconv.Itoa(i) })
				status := fmt.Sprintf(`{"status":{"other":{"seq":%d}}}`, i)
				errs <- k8s.Status().Patch(ctx, newExample(ns, examples[k]), client.RawPatch("application/merge-patch+json", []byte(status)))
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: maps[k]}}
				errs <- update(cm, time.Duration(rng.IntN(100))*time.Millisecond, func() { mark(cm, i); cm.Data["v"] = "v" + strconv.Itoa(i) })
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}

	// Everything the operator and the other writer wrote is there, and the
	// operator handled the final state.
	for _, name := range examples {
		g.Eventually(func(g Gomega) {
			obj := rawObject(g, client.ObjectKey{Namespace: ns, Name: name})
			g.Expect(handled(obj)).To(BeTrue())
			g.Expect(field(obj, "status", "update", "field")).To(Equal(last))
			g.Expect(isTrue(field(obj, "status", "create", "created"))).To(BeTrue())
			g.Expect(field(obj, "status", "other", "seq")).To(BeNumerically("==", rounds-1))
			g.Expect(field(obj, "metadata", "labels", "churn")).To(Equal(strconv.Itoa(rounds - 1)))
			g.Expect(field(obj, "metadata", "annotations", otherAnnotation)).To(Equal(strconv.Itoa(rounds - 1)))
			g.Expect(field(obj, "metadata", "finalizers")).To(ConsistOf(gopfFinalizer, otherFinalizer))
		}, timeout).Should(Succeed(), name)
	}
	for _, name := range maps {
		g.Eventually(func(g Gomega) {
			var cm corev1.ConfigMap
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
			g.Expect(cm.Annotations).To(HaveKeyWithValue("gopf.dev/last-handled-configuration", ContainSubstring(`"v":"`+last+`"`)))
			g.Expect(cm.Annotations).NotTo(HaveKey("gopf.dev/progress"))
			g.Expect(cm.Annotations).To(HaveKeyWithValue(otherAnnotation, strconv.Itoa(rounds-1)))
			g.Expect(cm.Labels).To(HaveKeyWithValue("churn", strconv.Itoa(rounds-1)))
			g.Expect(cm.Finalizers).To(ConsistOf(gopfFinalizer, otherFinalizer))
			mu.Lock()
			defer mu.Unlock()
			g.Expect(lastData[name]).To(Equal(last))
		}, timeout).Should(Succeed(), name)
	}

	// Deletion: gopf's delete handlers run and its finalizer goes; the
	// other writer's stays until it removes it.
	for i := range n {
		g.Expect(k8s.Delete(ctx, newExample(ns, examples[i]))).To(Succeed())
		g.Expect(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: maps[i]}})).To(Succeed())
	}
	for i := range n {
		for _, obj := range []client.Object{newExample(ns, examples[i]), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: maps[i]}}} {
			g.Eventually(func(g Gomega) []string {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
				return obj.GetFinalizers()
			}, timeout).Should(Equal([]string{otherFinalizer}))
			g.Expect(update(obj, 0, func() { controllerutil.RemoveFinalizer(obj, otherFinalizer) })).To(Succeed())
			g.Expect(envtest.WaitGone(ctx, k8s, obj)).To(Succeed())
		}
	}
	g.Expect(calls.perObject("delete")).To(HaveLen(n))
	g.Expect(calls.perObject("cm_delete")).To(HaveLen(n))

	// Conflicts are routine: retried without an error log, let alone one
	// with a stack trace.
	for _, line := range logs.Find("ERROR", "namespace="+ns) {
		g.Expect(line).NotTo(ContainSubstring("409 Conflict"), "a conflict was logged as an error")
		g.Expect(line).NotTo(ContainSubstring("has been modified"), "a conflict was logged as an error")
	}

	conflictsSeen, injected := 0, 0
	for _, r := range px.Requests() {
		switch {
		case r.Status == http.StatusConflict && r.Injected:
			injected++
		case r.Status == http.StatusConflict:
			conflictsSeen++
		}
	}
	dupes := map[string]int{}
	for _, id := range []string{"create", "cm_create", "delete", "cm_delete"} {
		for _, k := range calls.perObject(id) {
			dupes[strings.TrimPrefix(id, "cm_")] += k - 1
		}
	}
	record(t, "4", outcome{Objects: 2 * n, Outcome: "held", Figures: joinf(
		fmt.Sprintf("%d KopfExamples and %d ConfigMaps, %d rounds each", n, n, rounds),
		fmt.Sprintf("the other writer hit %d conflicts, the operator %d real and %d injected 409s", conflicts.Load(), conflictsSeen, injected),
		"every result, label, annotation, status field and finalizer of both writers survived",
		fmt.Sprintf("%d update handler calls for %d changes", calls.count("update")+calls.count("cm_update"), 2*n*rounds),
		fmt.Sprintf("%d extra create handler calls after failed state writes, %d extra delete handler calls after failed finalizer removals", dupes["create"], dupes["delete"]),
	)})
}
