package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// settle is how long a test watches an operator that should do nothing.
const settle = 2 * time.Second

// kopfFixture reads an object of internal/engine/testdata/kopf-state as Kopf left it.
func kopfFixture(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "internal", "engine", "testdata", "kopf-state", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return u
}

// recreateAsKopfLeftIt creates the object of a fixture in ns as Kopf left
// it (see internal/engine/testdata/kopf-state/README.md): without the fields the API server
// sets, its status written through the status subresource, and deleted if
// Kopf saw it being deleted (Kopf's finalizer holds it).
func recreateAsKopfLeftIt(t *testing.T, ns, file string) *unstructured.Unstructured {
	t.Helper()
	return recreate(t, ns, kopfFixture(t, file))
}

// recreate creates u as recreateAsKopfLeftIt does.
func recreate(t *testing.T, ns string, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	file := u.GetName()
	deleting := u.GetDeletionTimestamp() != nil
	status, hasStatus := u.Object["status"]
	delete(u.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	u.SetNamespace(ns)
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatalf("creating %s: %v", file, err)
	}
	if hasStatus {
		u.Object["status"] = status
		if err := k8s.Status().Update(ctx, u); err != nil {
			t.Fatalf("writing the status of %s: %v", file, err)
		}
	}
	if deleting {
		if err := k8s.Delete(ctx, u); err != nil {
			t.Fatalf("deleting %s: %v", file, err)
		}
	}
	return u
}

// kopfHandlers are the handlers of internal/engine/testdata/kopf-state/handlers.py, with
// Kopf's ids, recording their calls; flaky_fn fails as it did under Kopf.
// Level handlers (seen, seen_configmap) record the reconciles, so that a
// test knows gopf has looked at its object; without reconciled, the
// registry has only the handlers of handlers.py.
func kopfHandlers(cs *envtest.Calls, reconciled *envtest.Calls) *handlers.Registry {
	reg := handlers.NewRegistry()
	result := func(v map[string]any) handlers.HandlerFunc[*kopfv1.KopfExample] {
		return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			cs.Record(c)
			return v, nil
		}
	}
	handlers.OnCreate(reg, result(map[string]any{"message": "hello world"}), handlers.ID("create_fn"))
	handlers.OnUpdate(reg, result(map[string]any{"message": "updated"}), handlers.ID("update_fn"))
	handlers.OnField(reg, "spec.field", func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return map[string]any{"old": c.Old, "new": c.New}, nil
	}, handlers.ID("field_fn/spec.field"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, handlers.Temporary(errors.New("not yet"), 600*time.Second)
	}, handlers.ID("flaky_fn"), handlers.Labels{"flaky": "yes"})
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if obj.Labels["stuck-delete"] == "yes" && c.Retry == 0 {
			return nil, handlers.Temporary(errors.New("cannot delete yet"), 600*time.Second)
		}
		return nil, nil
	}, handlers.ID("delete_fn"))
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		cs.Record(c)
		yes := "yes"
		c.Patch.SetLabel("seen", &yes)
		return map[string]any{"ok": true}, nil
	}, handlers.ID("cm_create"), handlers.Labels{"capture": "yes"})
	handlers.OnDelete(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("cm_delete"), handlers.Labels{"capture": "yes"})
	if reconciled == nil {
		return reg
	}
	handlers.OnReconcile(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (reconcile.Result, error) {
		reconciled.Record(c)
		return reconcile.Result{}, nil
	}, handlers.ID("seen"))
	handlers.OnReconcile(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (reconcile.Result, error) {
		reconciled.Record(c)
		return reconcile.Result{}, nil
	}, handlers.ID("seen_configmap"), handlers.Labels{"capture": "yes"})
	return reg
}

var kopfHandlerIDs = []string{"create_fn", "update_fn", "field_fn/spec.field", "flaky_fn", "delete_fn", "cm_create", "cm_delete"}

// callsBut returns how many calls the handlers other than except got.
func callsBut(cs *envtest.Calls, except ...string) map[string]int {
	out := map[string]int{}
	for _, id := range kopfHandlerIDs {
		if n := cs.Count(id); n > 0 && !contains(except, id) {
			out[id] = n
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// takeOver recreates a fixture and starts gopf with Kopf's handlers on it.
func takeOver(t *testing.T, file string) (obj *unstructured.Unstructured, cs, reconciled *envtest.Calls, requests *envtest.RequestCounter) {
	t.Helper()
	ns := newNamespace(t)
	obj = recreateAsKopfLeftIt(t, ns, file)
	cs, reconciled, requests = &envtest.Calls{}, &envtest.Calls{}, &envtest.RequestCounter{}
	runOperator(t, ns, kopfHandlers(cs, reconciled), func(o *envtest.OperatorOptions) { o.Requests = requests })
	return obj, cs, reconciled, requests
}

// current reads obj back from the API server.
func current(g Gomega, obj *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), u)).To(Succeed())
	return u
}

func kopfStateOf(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range u.GetAnnotations() {
		if strings.HasPrefix(k, gopfreconcile.DefaultKopfPrefix+"/") {
			out[k] = v
		}
	}
	return out
}

func testHandledByKopfIsNotHandledAgain(t *testing.T, file string) {
	g := NewWithT(t)
	obj, cs, reconciled, requests := takeOver(t, file)
	before := kopfStateOf(obj)
	resource := strings.ToLower(obj.GetKind()) + "s"
	g.Expect(reconciled.WaitCount(context.Background(), "seen", 1)).To(Succeed())
	g.Consistently(func() map[string]int { return callsBut(cs) }, settle).Should(BeEmpty(), "no handler runs again")
	g.Expect(requests.Writes(resource, resource+"/status")).To(BeZero(), "taking over an object Kopf handled writes nothing")
	after := current(g, obj)
	g.Expect(kopfStateOf(after)).To(Equal(before))
	g.Expect(after.GetFinalizers()).To(Equal([]string{gopfreconcile.DefaultKopfFinalizer}), "Kopf's finalizer stays on a live object")
}

func TestTakingOverFromKopfACreatedObjectCallsNoHandlerAndWritesNothing(t *testing.T) {
	testHandledByKopfIsNotHandledAgain(t, "kopfexample-created.yaml")
}

func TestTakingOverFromKopfAnUpdatedObjectCallsNoHandlerAndWritesNothing(t *testing.T) {
	testHandledByKopfIsNotHandledAgain(t, "kopfexample-updated.yaml")
}

func TestTakingOverFromKopfAConfigMapCallsNothingAndReleasesKopfsFinalizerOnlyOnDeletion(t *testing.T) {
	g := NewWithT(t)
	obj, cs, reconciled, requests := takeOver(t, "configmap-captured.yaml")
	g.Expect(reconciled.WaitCount(context.Background(), "seen_configmap", 1)).To(Succeed())
	g.Consistently(func() map[string]int { return callsBut(cs) }, settle).Should(BeEmpty(), "no handler runs again")
	g.Expect(requests.Writes("configmaps")).To(BeZero(), "taking over an object Kopf handled writes nothing")
	g.Expect(current(g, obj).GetFinalizers()).To(Equal([]string{gopfreconcile.DefaultKopfFinalizer}), "Kopf's finalizer stays on a live object")

	g.Expect(k8s.Delete(context.Background(), obj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &corev1.ConfigMap{}))
	}, timeout).Should(BeTrue(), "the delete path releases Kopf's finalizer")
	g.Expect(cs.Count("cm_delete")).To(Equal(1))
	g.Expect(callsBut(cs, "cm_delete")).To(BeEmpty())
}

func TestTakingOverFromKopfAFlakyCreateContinuesItsRetriesAndNothingElse(t *testing.T) {
	g := NewWithT(t)
	obj, cs, _, _ := takeOver(t, "kopfexample-flaky.yaml")
	g.Expect(cs.WaitCount(context.Background(), "flaky_fn", 1)).To(Succeed())
	g.Expect(cs.Of("flaky_fn")[0].Retry).To(Equal(1), "the retry continues Kopf's count")
	g.Consistently(func() map[string]int { return callsBut(cs) }, settle).Should(Equal(map[string]int{"flaky_fn": 1}),
		"create_fn and field_fn succeeded under Kopf; flaky_fn waits 600 s")
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "progress", "flaky_fn", "retries") }, timeout).Should(BeNumerically("==", 2))
	g.Eventually(func(g Gomega) map[string]string { return kopfStateOf(current(g, obj)) }, timeout).Should(BeEmpty(), "gopf's own state replaced Kopf's on this object")
	g.Expect(current(g, obj).GetFinalizers()).To(Equal([]string{gopfreconcile.DefaultKopfFinalizer}))
}

func TestTakingOverFromKopfADeletionRunsTheDeleteHandlerOnceAndReleasesTheObject(t *testing.T) {
	g := NewWithT(t)
	obj, cs, _, _ := takeOver(t, "kopfexample-deleting.yaml")
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &kopfv1.KopfExample{})
		return apierrors.IsNotFound(err)
	}, timeout).Should(BeTrue(), "the object is gone: no finalizer is left")
	g.Expect(cs.Of("delete_fn")).To(HaveLen(1))
	g.Expect(cs.Of("delete_fn")[0].Retry).To(Equal(1), "the retry continues Kopf's count")
	g.Expect(callsBut(cs, "delete_fn")).To(BeEmpty())
}

func TestAnObjectKopfHandledMovesToGopfsStorageWithItsNextChange(t *testing.T) {
	g := NewWithT(t)
	obj, cs, reconciled, _ := takeOver(t, "kopfexample-created.yaml")
	g.Expect(reconciled.WaitCount(context.Background(), "seen", 1)).To(Succeed())
	var typed kopfv1.KopfExample
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &typed)).To(Succeed())
	patchSpec(g, &typed, `{"field":"c"}`)
	g.Expect(cs.WaitCount(context.Background(), "field_fn/spec.field", 1)).To(Succeed())
	g.Expect(cs.WaitCount(context.Background(), "update_fn", 1)).To(Succeed())
	field := cs.Of("field_fn/spec.field")[0]
	g.Expect([]any{field.Old, field.New}).To(Equal([]any{"a", "c"}), "the diff is against the essence Kopf handled")
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "gopf", "lastHandled") }, timeout).ShouldNot(BeNil())
	// The status patch goes first, then the object patch without Kopf's state.
	g.Eventually(func(g Gomega) map[string]string { return kopfStateOf(current(g, obj)) }, timeout).Should(BeEmpty(), "Kopf's state went with gopf's first write")
	g.Expect(current(g, obj).GetFinalizers()).To(Equal([]string{gopfreconcile.DefaultKopfFinalizer}), "Kopf's finalizer still holds the object for its delete handlers")
	g.Consistently(func() map[string]int { return callsBut(cs) }, settle).Should(Equal(map[string]int{"field_fn/spec.field": 1, "update_fn": 1}))
}

func TestTakingOverFromKopfARetryWaitsForTheDelayKopfSet(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	u := kopfFixture(t, "kopfexample-flaky.yaml")
	annotations := u.GetAnnotations()
	var rec map[string]any
	g.Expect(json.Unmarshal([]byte(annotations["kopf.zalando.org/flaky_fn"]), &rec)).To(Succeed())
	rec["delayed"] = time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000+00:00")
	data, err := json.Marshal(rec)
	g.Expect(err).NotTo(HaveOccurred())
	annotations["kopf.zalando.org/flaky_fn"] = string(data)
	u.SetAnnotations(annotations)
	recreate(t, ns, u)
	cs, reconciled, requests := &envtest.Calls{}, &envtest.Calls{}, &envtest.RequestCounter{}
	runOperator(t, ns, kopfHandlers(cs, reconciled), func(o *envtest.OperatorOptions) { o.Requests = requests })

	g.Expect(reconciled.WaitCount(context.Background(), "seen", 1)).To(Succeed())
	g.Consistently(func() map[string]int { return callsBut(cs) }, settle).Should(BeEmpty(), "flaky_fn is due in an hour, as Kopf set it")
	g.Expect(requests.Writes("kopfexamples", "kopfexamples/status")).To(BeZero(), "waiting for a retry writes nothing")
}

func TestTakingOverFromKopfWarnsInTheOperatorsLogOfAHandlerItDoesNotHave(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	recreateAsKopfLeftIt(t, ns, "kopfexample-flaky.yaml")
	var mu sync.Mutex
	var logs []string
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, args)
	}, funcr.Options{})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) { return nil, nil }, handlers.ID("create_fn"))
	g.Expect(gopfreconcile.Setup(mgr, reg, gopfreconcile.Options{})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(logs)
	}, timeout).Should(ContainElement(And(
		ContainSubstring("names a handler this operator does not have"),
		ContainSubstring(`"controller"="gopf-kopfexample.`),
		ContainSubstring("flaky_fn"))), "the warning reaches the controller's log")
}
