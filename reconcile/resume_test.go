package reconcile_test

import (
	"context"
	"errors"
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
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("create"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, handlers.Temporary(errors.New("not yet"), time.Hour)
	}, handlers.ID("update"))
	handlers.OnResume(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("resume"))
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
