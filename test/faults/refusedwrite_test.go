package faults_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// labelling is the registry of the refused-write scenarios: a create
// handler that labels its object ("labelled": "yes") and returns a result,
// and an update handler, both recording their calls in cs.
func labelling(cs *envtest.Calls) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		labelled := "yes"
		c.Patch.SetLabel("labelled", &labelled)
		return map[string]any{"done": true}, nil
	}, handlers.ID("create"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		cs.Record(c)
		return nil, nil
	}, handlers.ID("update"))
	return reg
}

// A handler's own patch (here a label) goes out with the state that
// describes the patched object. When the API server refuses that write,
// the outcome gopf keeps must not describe a patch that was never applied:
// the patch is sent again with it, the handler is not called again, and the
// next reconcile does not take the missing label for a change.
func TestARefusedWriteKeepsTheHandlersPatchWithItsOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused func(r *http.Request) bool // the part of the write the API server refuses
	}{
		{"the status patch", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/status") }},
		{"the object patch", func(r *http.Request) bool { return !strings.HasSuffix(r.URL.Path, "/status") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			px := newProxy(t, 27)
			var refusing atomic.Bool
			refusing.Store(true)
			px.SetFaults(faults.Faults{Fraction: 1, Statuses: []int{http.StatusInternalServerError}, Match: func(r *http.Request) bool {
				return refusing.Load() && r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/kopfexamples/") && tc.refused(r)
			}})
			var cs envtest.Calls
			runOperator(t, throughProxy(px, -1, 0), ns, labelling(&cs))

			obj := newExample(ns, "refused")
			g.Expect(k8s.Create(ctx, obj)).To(Succeed())
			g.Eventually(func() bool {
				for _, r := range px.Requests() {
					if r.Injected && r.Write() {
						return true
					}
				}
				return false
			}, timeout).Should(BeTrue(), "the write was refused")
			refusing.Store(false)

			key := client.ObjectKeyFromObject(obj)
			g.Eventually(func(g Gomega) map[string]string {
				g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
				return obj.Labels
			}, timeout).Should(HaveKeyWithValue("labelled", "yes"), "the handler's patch was sent again")
			g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key)) }, timeout).Should(BeTrue())
			g.Expect(isTrue(field(rawObject(g, key), "status", "create", "done"))).To(BeTrue())
			// The handler's patch landed once: after a refused status
			// write, only the status write is sent again.
			g.Expect(landedObjectPatches(px, obj.Name)).To(Equal(1), "the handler's patch was sent again after it had landed")

			// A change of the spec is the next update: no update came
			// before it for a label the handler set itself.
			g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"changed"}}`)))).To(Succeed())
			g.Eventually(func() int { return cs.Count("update") }, timeout).Should(Equal(1))
			g.Expect(cs.Of("update")[0].Diff).To(Equal("[(change, spec.field, value, changed)]"))
			g.Expect(cs.Count("create")).To(Equal(1), "the create handler ran again")
		})
	}
}

// landedObjectPatches counts the patches of the object named name (not of
// its status) that the API server applied.
func landedObjectPatches(px *faults.Proxy, name string) int {
	n := 0
	for _, r := range px.Requests() {
		res, of := r.Resource()
		if r.Method == http.MethodPatch && of == name && !strings.HasSuffix(res, "/status") && !r.Injected && r.Status > 0 && r.Status < 400 {
			n++
		}
	}
	return n
}

// A process that dies while the handler's own patch is refused must not
// leave the call recorded as done without that patch: with the state in
// status, gopf once wrote the status (results and state) first and the
// object patch second, so a kill between them lost the label for good and
// the next process called the update handler for its absence, a change
// nobody made. The object patch goes first now: the kill cuts the call,
// which the next process runs again (the at-least-once a kill allows).
func TestAKillWhileTheHandlersPatchIsRefusedCutsTheCallAndLosesNoChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 28)
	var refusing atomic.Bool
	refusing.Store(true)
	px.SetFaults(faults.Faults{Fraction: 1, Statuses: []int{http.StatusConflict}, Match: func(r *http.Request) bool {
		return refusing.Load() && r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/kopfexamples/") &&
			!strings.HasSuffix(r.URL.Path, "/status")
	}})
	var cs envtest.Calls
	opCfg := throughProxy(px, -1, 0)
	first := runOperator(t, opCfg, ns, labelling(&cs))

	obj := newExample(ns, "cut")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func() int {
		n := 0
		for _, r := range px.Requests() {
			if r.Injected && r.Write() {
				n++
			}
		}
		return n
	}, timeout).Should(BeNumerically(">=", 2), "the handler's patch was refused, and refused again when sent again")
	px.Outage() // the kill: nothing the operator writes from now on lands
	_ = first.Stop()
	px.Restore()
	refusing.Store(false)
	runOperator(t, opCfg, ns, labelling(&cs))

	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) {
		raw := rawObject(g, key)
		g.Expect(handled(raw)).To(BeTrue())
		g.Expect(field(raw, "metadata", "labels", "labelled")).To(Equal("yes"), "the handler's patch is on the object")
	}, timeout).Should(Succeed())
	g.Expect(cs.Count("create")).To(BeNumerically("<=", 2), "the cut call ran again at most once")

	// The next update is a change of the spec, and the only one: none came
	// for the label.
	g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"changed"}}`)))).To(Succeed())
	g.Eventually(func() int { return cs.Count("update") }, timeout).Should(Equal(1))
	g.Expect(cs.Of("update")[0].Diff).To(Equal("[(change, spec.field, value, changed)]"))
}
