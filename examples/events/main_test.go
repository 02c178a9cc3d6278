package main

import (
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestTheHandlerPostsNormalAndWarningEvents(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "eventful"},
		Spec:       kopfv1.KopfExampleSpec{Field: "value"},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())

	byReason := func(g Gomega) map[string]eventsv1.Event {
		events, err := envtest.Events(ctx, k8s, obj)
		g.Expect(err).NotTo(HaveOccurred())
		out := map[string]eventsv1.Event{}
		for _, e := range events {
			out[e.Reason] = e
		}
		return out
	}
	g.Eventually(byReason).WithTimeout(envtest.DefaultTimeout).Should(HaveLen(4))
	events := byReason(g)
	for reason, want := range map[string]struct{ kind, note string }{
		"Greeting": {"Normal", "Hello from gopf"},
		"Created":  {"Normal", `eventful has field "value"`},
		"NoItems":  {"Warning", "eventful has no items to work on"},
		"Error":    {"Warning", "the service does not know value"},
	} {
		g.Expect(events).To(HaveKey(reason))
		e := events[reason]
		g.Expect(e.Type).To(Equal(want.kind), reason)
		g.Expect(e.Note).To(Equal(want.note), reason)
		g.Expect(e.Regarding.Kind).To(Equal("KopfExample"))
		g.Expect(e.Regarding.UID).To(Equal(obj.UID))
	}
	g.Expect(events).NotTo(HaveKey("Logging"), "log lines are not posted as Events")
}
