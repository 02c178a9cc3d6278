package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// labelObject merges labels into an object's metadata.
func labelObject(g Gomega, obj client.Object, labels string) {
	g.Expect(k8s.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"labels":`+labels+`}}`)))).To(Succeed())
}

func TestFieldHandlerReasonIsTheObjectsCauseAndTheFieldsAppearanceShowsInTheDiff(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnField(reg, "metadata.labels.app", recording(&cs, nil), handlers.ID("app"))
	runOperator(t, ns, reg)

	// An object created with the label: the object's cause is create.
	labelled := newExample(ns, "labelled")
	labelled.Labels = map[string]string{"app": "one"}
	g.Expect(k8s.Create(context.Background(), labelled)).To(Succeed())
	g.Eventually(func() int { return cs.Count("app") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("app")[0].Reason).To(Equal(handlers.ReasonCreate))
	g.Expect(cs.Of("app")[0].Diff).To(Equal("[(add, , <nil>, one)]"))

	// An object labelled after its creation: the label appeared, but the
	// object's cause is an update, as Kopf's reason says.
	plain := newExample(ns, "plain")
	g.Expect(k8s.Create(context.Background(), plain)).To(Succeed())
	waitHandled(g, client.ObjectKeyFromObject(plain))
	labelObject(g, plain, `{"app":"two"}`)
	g.Eventually(func() int { return cs.Count("app") }, timeout).Should(Equal(2))
	got := cs.Of("app")[1]
	g.Expect(got.Name).To(Equal("plain"))
	g.Expect(got.Reason).To(Equal(handlers.ReasonUpdate))
	g.Expect(got.Old).To(BeNil())
	g.Expect(got.New).To(Equal("two"))
	g.Expect(got.Diff).To(Equal("[(add, , <nil>, two)]"))
}

func TestFieldPathGivenAsKeysReachesALabelWithDotsInItsKey(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnField(reg, []string{"metadata", "labels", "app.kubernetes.io/name"}, recording(&cs, nil), handlers.ID("name"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "keys")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	waitHandled(g, client.ObjectKeyFromObject(obj))
	labelObject(g, obj, `{"app.kubernetes.io/name":"db","other":"x"}`)
	g.Eventually(func() int { return cs.Count("name") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("name")[0].New).To(Equal("db"))

	labelObject(g, obj, `{"app.kubernetes.io/name":null}`)
	g.Eventually(func() int { return cs.Count("name") }, timeout).Should(Equal(2))
	g.Expect(cs.Of("name")[1].Old).To(Equal("db"))
	g.Expect(cs.Of("name")[1].Diff).To(Equal("[(remove, , db, <nil>)]"))
}

func TestCreateHandlerDiffIsTheWholeEssenceAddedAtTheRoot(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&cs, nil), handlers.ID("create"))
	handlers.OnCreate(reg, recording(&cs, nil), handlers.ID("field"), handlers.Field("spec.field"))
	runOperator(t, ns, reg)

	g.Expect(k8s.Create(context.Background(), newExample(ns, "root"))).To(Succeed())
	g.Eventually(func() int { return cs.Count("create") + cs.Count("field") }, timeout).Should(Equal(2))
	// Kopf's diff[0] on creation: ('add', (), None, body).
	g.Expect(cs.Of("create")[0].Diff).To(Equal("[(add, , <nil>, map[spec:map[field:value items:[item1 item2]]])]"))
	g.Expect(cs.Of("field")[0].Diff).To(Equal("[(add, , <nil>, value)]"))
}

func TestLaterHandlersOfACauseSeeEarlierHandlersResultsBeforeTheWrite(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	type seen struct {
		result any
		ok     bool
	}
	got := make(chan seen, 4)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "created", "count": 1}, nil
	}, handlers.ID("create_fn"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		r, ok := c.Result("create_fn")
		got <- seen{r, ok}
		_, unknown := c.Result("nobody")
		g.Expect(unknown).To(BeFalse())
		return nil, nil
	}, handlers.ID("label_fn"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		// Nothing returned in this reconcile: the stored result.
		r, ok := c.Result("create_fn")
		got <- seen{r, ok}
		return nil, nil
	}, handlers.ID("update_fn"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "results")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	var first seen
	g.Eventually(got, timeout).Should(Receive(&first))
	g.Expect(first.ok).To(BeTrue())
	g.Expect(first.result).To(Equal(map[string]any{"message": "created", "count": 1.0}))

	waitHandled(g, client.ObjectKeyFromObject(obj))
	patchSpec(g, obj, `{"field":"changed"}`)
	var later seen
	g.Eventually(got, timeout).Should(Receive(&later))
	g.Expect(later).To(Equal(first))
}

func TestDaemonPatchIsAppliedAfterEachAttempt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*kopfv1.KopfExample], c *handlers.Cause) error {
		c.Patch.SetStatus("daemon", map[string]any{"attempt": c.Retry + 1})
		if c.Retry == 0 {
			return handlers.Temporary(errors.New("once more"), time.Millisecond)
		}
		value := "ran"
		c.Patch.SetLabel("daemon", &value)
		return nil
	}, handlers.ID("daemon"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "daemon")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "daemon", "attempt") }, timeout).Should(BeEquivalentTo(2))
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
		return obj.Labels
	}, timeout).Should(HaveKeyWithValue("daemon", "ran"))
}

func TestTransformationsGoOutInTheSameSingleWriteAsTheMergePatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Patch.SetStatus("phase", "ready")
		return map[string]any{"done": true}, c.Patch.Transform(func(obj map[string]any) {
			status, ok := obj["status"].(map[string]any)
			if !ok {
				status = map[string]any{}
				obj["status"] = status
			}
			conditions, _ := status["conditions"].([]any)
			status["conditions"] = append(conditions, map[string]any{"type": "Ready", "status": "True"})
		})
	}, handlers.ID("ready"))
	var requests envtest.RequestCounter
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Requests = &requests })

	obj := newExample(ns, "single")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "conditions") }, timeout).Should(Equal([]any{map[string]any{"type": "Ready", "status": "True"}}))
	g.Expect(statusField(g, key, "phase")).To(Equal("ready"))
	g.Expect(statusTrue(g, key, "ready", "done")).To(BeTrue())
	waitHandled(g, key)
	// Result, state, the merge change and the appended condition: one
	// write (there is no finalizer: nothing needs one).
	g.Consistently(func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }, 2*time.Second).Should(Equal(1), "%v", requests.Snapshot())
}

func TestTransformationsRemoveFromListsOfTheObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		if err := c.Patch.Set("spec.field", "set"); err != nil {
			return nil, err
		}
		return nil, c.Patch.Transform(func(obj map[string]any) {
			spec := obj["spec"].(map[string]any)
			spec["items"] = slices.DeleteFunc(spec["items"].([]any), func(item any) bool { return item == "item1" })
		})
	}, handlers.ID("trim"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "trimmed")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) kopfv1.KopfExampleSpec {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.Spec
	}, timeout).Should(Equal(kopfv1.KopfExampleSpec{Field: "set", Items: []string{"item2"}}))
}

func TestEventsAboutOtherObjectsWithTheirComponentAndReason(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	g.Expect(k8s.Create(ctx, child)).To(Succeed())
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.PostAbout(child, corev1.EventTypeNormal, "ChildMade", "made by "+obj.Name)
		c.Warn("Broken", "%v", errors.New("something broke"))
		return nil, nil
	}, handlers.ID("post"))
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.EventComponent = "my-operator" })

	obj := newExample(ns, "parent")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	find := func(g Gomega, about, reason string) *eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for i, e := range list.Items {
			if e.Regarding.Name == about && e.Reason == reason {
				return &list.Items[i]
			}
		}
		return nil
	}
	var made, broken *eventsv1.Event
	g.Eventually(func(g Gomega) *eventsv1.Event { made = find(g, "child", "ChildMade"); return made }, timeout).ShouldNot(BeNil())
	g.Expect(made.Regarding.Kind).To(Equal("ConfigMap"))
	g.Expect(made.Related).NotTo(BeNil())
	g.Expect(made.Related.Name).To(Equal("parent"))
	g.Expect(made.Note).To(Equal("made by parent"))
	g.Expect(made.ReportingController).To(Equal("my-operator"))
	g.Eventually(func(g Gomega) *eventsv1.Event { broken = find(g, "parent", "Broken"); return broken }, timeout).ShouldNot(BeNil())
	g.Expect(broken.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(broken.Note).To(Equal("something broke"))
}

func TestEventsOffPostsNoEventsAtAll(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		c.Info("Greeted", "hello")
		c.Log.Info("a log line")
		return nil, nil
	}, handlers.ID("greet"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Permanent(errors.New("no")) // gopf's own HandlerFailed Event
	}, handlers.ID("fail"))
	runOperator(t, ns, reg, func(o *envtest.OperatorOptions) {
		o.Reconcile.EventsOff = true
		o.Reconcile.LogEvents = gopfreconcile.LogEventsInfo
	})

	obj := newExample(ns, "quiet")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	waitHandled(g, client.ObjectKeyFromObject(obj))
	g.Consistently(func(g Gomega) []string { return eventReasons(g, ns, obj.Name) }, 2*time.Second).Should(BeEmpty())
}

func TestAnInvalidEventComponentIsASetupError(t *testing.T) {
	mgr, err := newManager()
	if err != nil {
		t.Fatal(err)
	}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recording(&envtest.Calls{}, nil))
	err = gopfreconcile.Setup(mgr, reg, gopfreconcile.Options{EventComponent: "not a name"})
	if err == nil || !strings.Contains(err.Error(), `EventComponent "not a name"`) {
		t.Fatalf("Setup error = %v, want one naming the EventComponent", err)
	}
}
