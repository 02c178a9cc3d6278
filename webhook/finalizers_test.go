package webhook_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/webhook"
)

const gopfFinalizer = "gopf.dev/finalizer"

// finalizerWebhookIn waits until the mutating configuration name holds the
// finalizer webhook of KopfExample, and returns it.
func finalizerWebhookIn(g Gomega, name string) admissionregistrationv1.MutatingWebhook {
	var found admissionregistrationv1.MutatingWebhook
	g.Eventually(func(g Gomega) {
		var mc admissionregistrationv1.MutatingWebhookConfiguration
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, &mc)).To(Succeed())
		i := slices.IndexFunc(mc.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
			return w.Name == "gopf-create.kopfexample.kopf.dev."+name
		})
		g.Expect(i).NotTo(Equal(-1), "no create webhook for KopfExample in %s", name)
		found = mc.Webhooks[i]
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return found
}

// With the finalizer added at admission, a create costs the operator one
// write: the outcome of its handlers. Objects the engine would not give a
// finalizer (outside its namespaces, or not selected by a delete handler)
// get none, and deletion runs the delete handler as always.
func TestNewObjectsGetTheFinalizerAtAdmissionAndACreateCostsOneWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	var deleted envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return "created", nil
	}, handlers.ID("create_fn"), selectTest(t))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		deleted.Record(c)
		return nil, nil
	}, handlers.ID("delete_fn"), selectTest(t), handlers.Field("spec.field"), handlers.Value("held"))
	var requests envtest.RequestCounter
	opts := webhook.Options{Name: testLabel(t) + ".test.gopf.dev", CertDir: t.TempDir(), Finalizers: webhook.FinalizersAlways}
	op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{
		Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts, Requests: &requests,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })

	w := finalizerWebhookIn(g, opts.Name)
	g.Expect(*w.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	g.Expect(w.Rules[0].Operations).To(Equal([]admissionregistrationv1.OperationType{admissionregistrationv1.Create}))

	held := example(t, ns, "held")
	g.Expect(k8s.Create(ctx, held)).To(Succeed())
	g.Expect(held.Finalizers).To(ContainElement(gopfFinalizer), "the object came back from its create without the finalizer")
	for _, obj := range []*kopfv1.KopfExample{example(t, ns, "free"), example(t, other, "held")} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		g.Expect(obj.Finalizers).To(BeEmpty(), "%s/%s (spec.field %s) needs no finalizer", obj.Namespace, obj.Name, obj.Spec.Field)
	}

	g.Eventually(func(g Gomega) {
		var got kopfv1.KopfExample
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(held), &got)).To(Succeed())
		g.Expect(got.Status.Extra).To(HaveKey("create_fn"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	writesOfHeld := func() int { return requests.Writes("kopfexamples", "kopfexamples/status") }
	// Two objects in the operator's namespace were created; the free one
	// costs one write too (its create result). Neither got a finalizer write.
	g.Eventually(writesOfHeld, 30*time.Second, 50*time.Millisecond).Should(Equal(2))
	g.Consistently(writesOfHeld, time.Second, 100*time.Millisecond).Should(Equal(2), "requests: %v", requests.Snapshot())

	g.Expect(k8s.Delete(ctx, held)).To(Succeed())
	g.Eventually(func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(held), &kopfv1.KopfExample{}) != nil
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the object was never released")
	g.Expect(deleted.Count("delete_fn")).To(Equal(1))
}

// An operator whose only webhooks are finalizer webhooks has no validating
// configuration: it neither creates one at start nor asks to delete one at
// stop; it removes the mutating one it made.
func TestOnlyFinalizerWebhooksTouchNoValidatingConfiguration(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("delete_fn"), selectTest(t))
	var requests envtest.RequestCounter
	opts := webhook.Options{Name: testLabel(t) + ".test.gopf.dev", CertDir: t.TempDir(), Finalizers: webhook.FinalizersAlways}
	op, err := envtest.RunOperator(ctx, cfg, reg, envtest.OperatorOptions{
		Scheme: scheme, Namespaces: []string{ns}, Webhook: &opts, Requests: &requests,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })
	finalizerWebhookIn(g, opts.Name)
	g.Expect(op.Stop()).To(Succeed())

	err = k8s.Get(ctx, client.ObjectKey{Name: opts.Name}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the mutating configuration is still there: %v", err)
	g.Expect(requests.Count("DELETE", "mutatingwebhookconfigurations")).To(Equal(1))
	for _, verb := range []string{"GET", "POST", "PUT", "DELETE"} {
		g.Expect(requests.Count(verb, "validatingwebhookconfigurations")).To(BeZero(), "%s of a validating configuration; requests: %v", verb, requests.Snapshot())
	}
}
