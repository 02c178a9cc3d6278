package faults_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/faults"
)

// A kind whose status keeps the handlers' results while gopf keeps its
// state in annotations gets the results in a status patch and the state in
// an object patch after it. When the status patch lands but its answer is
// lost, gopf reads the object back, sees the results and writes the state
// in the same reconcile: an operator stopped while that status patch was
// on its way, so that no other reconcile follows, leaves the state stored,
// and the next one does not run the create handler again.
func TestALostStatusAnswerStillStoresTheStateBeforeAStop(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 7)
	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, calls.recording(), handlers.ID("create"))
	annotations := func(o *envtest.OperatorOptions) { o.Reconcile.Storage = reconcile.StorageAnnotations }
	statusPatches := func(r *http.Request) bool {
		return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/kopfexamples/")
	}
	px.SetFaults(faults.Faults{LoseFraction: 1, Loss: faults.Loss502, Delay: time.Second, Match: statusPatches})
	first := runOperator(t, throughProxy(px, 20, 30), ns, reg, annotations)

	g.Expect(k8s.Create(ctx, newExample(ns, "lost"))).To(Succeed())
	// The stop begins while the proxy holds the status patch back.
	g.Eventually(func() []call { return calls.of("create", "lost") }, timeout).Should(HaveLen(1))
	g.Expect(first.Stop()).To(Succeed())
	lost := false
	for _, r := range px.Requests() {
		lost = lost || r.Lost && strings.HasSuffix(r.Path, "/lost/status")
	}
	g.Expect(lost).To(BeTrue(), "the status write's answer was not lost")
	px.SetFaults(faults.Faults{})

	var obj kopfv1.KopfExample
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost"}, &obj)).To(Succeed())
	g.Expect(obj.Status.Extra).To(HaveKey("create"), "the result landed")
	runOperator(t, cfg, ns, reg, annotations)
	g.Consistently(func() []call { return calls.of("create", "lost") }, 3*time.Second, 100*time.Millisecond).Should(HaveLen(1),
		"the create handler ran again after a restart: the state was not stored after the lost answer")
}
