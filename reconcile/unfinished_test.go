package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// A resume handler runs once in every process, also while an update of the
// same cause is unfinished: the record of an earlier process's resume,
// which stays with the unfinished update's records, does not count as this
// process's.
func TestResumeHandlersRunOnceInEveryProcessWhileAnUpdateIsUnfinished(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recordOnly(&cs), handlers.ID("create"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, handlers.Temporary(errors.New("not yet"), time.Hour)
	}, handlers.ID("update"))
	handlers.OnResume(reg, recordOnly(&cs), handlers.ID("resume"))
	env.Start(reg, envtest.OperatorOptions{})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "resumed"}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "create", 1)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
		_, found, _ := unstructured.NestedString(u.Object, "status", "gopf", "lastHandled")
		return found
	}, timeout).Should(BeTrue(), "the create was not recorded")

	// Changed while the operator is down: the next process runs the
	// update, which keeps failing, and the resume handler.
	g.Expect(env.Operator.Stop()).To(Succeed())
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"changed":"yes"}}}`))
	g.Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
	env.Restart()
	g.Expect(cs.WaitCount(ctx, "resume", 1)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "update", 1)).To(Succeed())

	// The update is unfinished (its retry is an hour away); the next
	// process resumes the object again.
	env.Restart()
	g.Expect(cs.WaitCount(ctx, "resume", 2)).To(Succeed(), "the second process did not resume the object")
	g.Expect(cs.Count("create")).To(Equal(1))
}

// A field handler that finished for its field's change is not called again
// while another handler of the same update retries and changes elsewhere
// arrive: its record stays until the cause is complete.
func TestAFieldHandlerIsNotCalledAgainWhileAnotherUpdateHandlerRetries(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recordOnly(&cs), handlers.ID("create"))
	handlers.OnUpdate(reg, heldUntilReleased(&cs), handlers.ID("update"))
	handlers.OnUpdate(reg, recordOnly(&cs), handlers.ID("watched"), handlers.Field("metadata.annotations.watched"))
	env.Start(reg, envtest.OperatorOptions{})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "retrying",
		Annotations: map[string]string{"watched": "one"}}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "create", 1)).To(Succeed())

	patch := func(body string) { mergePatch(g, env, obj, body) }
	patch(`{"metadata":{"annotations":{"watched":"two"}}}`)
	g.Expect(cs.WaitCount(ctx, "watched", 1)).To(Succeed())
	// Another change while the update handler retries: the update handler
	// sees it (two more attempts), the field handler has nothing new.
	patch(`{"metadata":{"labels":{"other":"x"}}}`)
	attempts := cs.Count("update")
	g.Expect(cs.WaitCount(ctx, "update", attempts+2)).To(Succeed())
	patch(`{"metadata":{"labels":{"release":"yes"}}}`)
	g.Eventually(func(g Gomega) bool { return released(g, env, obj) }, timeout).Should(BeTrue(), "the update never completed")
	g.Expect(cs.Count("watched")).To(Equal(1), "the field handler ran again for changes of other fields: %v", cs.Of("watched"))
}

// A field handler that finished for a create that is unfinished (another
// create handler retries) sees a change of its field made meanwhile, from
// the value it finished on; the create handler sees the object as it is
// when it succeeds, and no update follows.
func TestAFieldHandlerSeesAChangeMadeWhileTheCreateRetries(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, heldUntilReleased(&cs), handlers.ID("create"))
	handlers.OnUpdate(reg, recordOnly(&cs), handlers.ID("update"))
	handlers.OnField(reg, "metadata.annotations.watched", recordOnly(&cs), handlers.ID("watched"))
	env.Start(reg, envtest.OperatorOptions{})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "created",
		Annotations: map[string]string{"watched": "one"}}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "watched", 1)).To(Succeed())
	patch := func(body string) { mergePatch(g, env, obj, body) }
	patch(`{"metadata":{"annotations":{"watched":"two"}}}`)
	g.Expect(cs.WaitCount(ctx, "watched", 2)).To(Succeed(), "the field handler missed the change made while the create retried")
	second := cs.Of("watched")[1]
	g.Expect(second.Old).To(Equal("one"))
	g.Expect(second.New).To(Equal("two"))

	patch(`{"metadata":{"labels":{"release":"yes"}}}`)
	g.Eventually(func(g Gomega) bool { return released(g, env, obj) }, timeout).Should(BeTrue(), "the create never completed")
	g.Expect(cs.Count("watched")).To(Equal(2), "calls: %v", cs.Of("watched"))
	g.Expect(cs.Count("update")).To(Equal(0), "the changes made during the create are the create's")
}

// A change made after a create handler finished, while another create
// handler retries, reaches the update handlers once the create is done:
// the create is recorded as handled on what the first one saw.
func TestAChangeMadeWhileACreateRetriesReachesTheUpdateHandlers(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recordOnly(&cs), handlers.ID("create"))
	handlers.OnCreate(reg, heldUntilReleased(&cs), handlers.ID("slow"))
	handlers.OnUpdate(reg, recordOnly(&cs), handlers.ID("update"))
	env.Start(reg, envtest.OperatorOptions{})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "changed"},
		Spec: kopfv1.KopfExampleSpec{Field: "one"}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "create", 1)).To(Succeed())
	attempts := cs.Count("slow")
	mergePatch(g, env, obj, `{"spec":{"field":"two"}}`)
	g.Expect(cs.WaitCount(ctx, "slow", attempts+2)).To(Succeed(), "the slow create handler stopped retrying")
	mergePatch(g, env, obj, `{"metadata":{"labels":{"release":"yes"}}}`)

	g.Expect(cs.WaitCount(ctx, "update", 1)).To(Succeed(), "the change made while the create retried never reached the update handler")
	g.Expect(cs.Of("update")[0].Diff).To(ContainSubstring("spec.field"))
	g.Expect(cs.Count("create")).To(Equal(1))
}

// heldUntilReleased is a handler that records its calls in cs and fails
// for a while (a retry in 100 ms) until its object has the label
// release=yes.
func heldUntilReleased(cs *envtest.Calls) func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) {
	return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		if obj.Labels["release"] != "yes" {
			return nil, handlers.Temporary(errors.New("held"), 100*time.Millisecond)
		}
		return nil, nil
	}
}

// mergePatch sends a JSON merge patch of obj.
func mergePatch(g Gomega, env *envtest.Env, obj client.Object, body string) {
	g.Expect(env.Client.Patch(env.Ctx, obj, client.RawPatch("application/merge-patch+json", []byte(body)))).To(Succeed())
}

// released reports whether the object's state records as handled, with
// nothing unfinished, the object released by release=yes.
func released(g Gomega, env *envtest.Env, obj client.Object) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	g.Expect(env.Client.Get(env.Ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	_, unfinished, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "gopf", "progress")
	handled, _, _ := unstructured.NestedString(u.Object, "status", "gopf", "lastHandled")
	return !unfinished && strings.Contains(handled, `"release":"yes"`)
}

// recordOnly is a handler that records its calls in cs and succeeds.
func recordOnly(cs *envtest.Calls) func(context.Context, *kopfv1.KopfExample, *handlers.Cause) (any, error) {
	return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}
}
