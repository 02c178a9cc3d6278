package main

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

// monitor decodes status.monitor.
type monitor struct {
	Field   string
	Attempt int
	Stopped handlers.StopReason
}

func monitorOf(obj *kopfv1.KopfExample) monitor {
	var m monitor
	_ = json.Unmarshal(obj.Status.Extra["monitor"].Raw, &m)
	return m
}

func monitored(ns, name string) *kopfv1.KopfExample {
	return &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{monitorLabel: "true"}},
		Spec:       kopfv1.KopfExampleSpec{Field: "a"},
	}
}

func mergePatch(patch string) client.Patch {
	return client.RawPatch("application/merge-patch+json", []byte(patch))
}

func TestTheDaemonLivesAsLongAsItsObjectMatchesAndTheOperatorRuns(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(100*time.Millisecond), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns, op := env.Ctx, env.Client, env.Namespace, env.Operator

	// Started, failed once on purpose, started again; it follows the object.
	kept := monitored(ns, "kept")
	g.Expect(k8s.Create(ctx, kept)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, kept, func(obj *kopfv1.KopfExample) bool { return monitorOf(obj).Field == "a" })).To(Succeed())
	g.Expect(monitorOf(kept).Attempt).To(Equal(2), "the temporary error restarted it")
	g.Expect(k8s.Patch(ctx, kept, mergePatch(`{"spec":{"field":"b"}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, kept, func(obj *kopfv1.KopfExample) bool { return monitorOf(obj).Field == "b" })).To(Succeed())

	// The label goes: the daemon is asked to stop.
	unlabelled := monitored(ns, "unlabelled")
	g.Expect(k8s.Create(ctx, unlabelled)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, unlabelled, func(obj *kopfv1.KopfExample) bool { return monitorOf(obj).Field == "a" })).To(Succeed())
	g.Expect(k8s.Patch(ctx, unlabelled, mergePatch(`{"metadata":{"labels":{"`+monitorLabel+`":null}}}`))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, unlabelled, func(obj *kopfv1.KopfExample) bool {
		return monitorOf(obj).Stopped == handlers.StopFiltersMismatch
	})).To(Succeed())

	// The object is deleted: gopf's finalizer keeps it until the daemon has
	// returned.
	deleted := monitored(ns, "deleted")
	g.Expect(k8s.Create(ctx, deleted)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, deleted, func(obj *kopfv1.KopfExample) bool { return monitorOf(obj).Field == "a" })).To(Succeed())
	g.Expect(deleted.Finalizers).To(ContainElement("gopf.dev/finalizer"))
	g.Expect(k8s.Delete(ctx, deleted)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, deleted)).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		events, err := envtest.Events(ctx, k8s, deleted)
		g.Expect(err).NotTo(HaveOccurred())
		var notes []string
		for _, e := range events {
			notes = append(notes, e.Note)
		}
		return notes
	}).WithTimeout(envtest.DefaultTimeout).Should(ContainElement("the monitor stopped: deleted"))

	// The operator stops: so do its daemons, first.
	g.Expect(op.Stop()).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed())
	g.Expect(monitorOf(kept).Stopped).To(Equal(handlers.StopOperatorExiting))
}
