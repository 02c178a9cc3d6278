package reconcile_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	gopfreconcile "github.com/gopf-dev/gopf/reconcile"
)

// With the state in Kopf's format, a field handler that finished a create
// on a newer value of its field than the create handler saw is not called
// again for that value by the update that follows: its record, which Kopf's
// format gives the purpose "create" while nothing is handled, carries over
// into the update as the update's.
func TestInKopfsFormatAFieldHandlerThatFinishedTheCreateOnANewerValueIsNotCalledAgain(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, recordOnly(&cs), handlers.ID("create"))
	handlers.OnField(reg, "metadata.annotations.watched", heldUntilReleased(&cs), handlers.ID("watched"))
	env.Start(reg, envtest.OperatorOptions{Reconcile: gopfreconcile.Options{Storage: gopfreconcile.StorageKopf}})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "created",
		Annotations: map[string]string{"watched": "one"}}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	g.Expect(cs.WaitCount(ctx, "create", 1)).To(Succeed())
	attempts := cs.Count("watched")
	g.Expect(cs.WaitCount(ctx, "watched", attempts+1)).To(Succeed(), "the field handler does not retry")
	// The create handler finished on "one"; the field handler, still
	// retrying, finishes on "two".
	mergePatch(g, env, obj, `{"metadata":{"labels":{"release":"yes"},"annotations":{"watched":"two"}}}`)
	g.Eventually(func(g Gomega) {
		got := &kopfv1.KopfExample{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		g.Expect(got.Annotations[gopfreconcile.DefaultKopfPrefix+"/last-handled-configuration"]).To(ContainSubstring(`"watched":"two"`))
		for k := range got.Annotations {
			g.Expect(strings.HasPrefix(k, gopfreconcile.DefaultKopfPrefix+"/watched")).To(BeFalse(), "the field handler's record is still there")
		}
	}, timeout).Should(Succeed(), "the change never became the last-handled one")
	// "two" came with the release: the first call that saw it succeeded.
	var onTwo []envtest.Call
	for _, c := range cs.Of("watched") {
		if c.New == "two" {
			onTwo = append(onTwo, c)
		}
	}
	g.Expect(onTwo).To(HaveLen(1), "the field handler ran again on the value it had finished on")
}
