package faults_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

// patchField sets spec.field of a KopfExample with the test's own client.
func patchField(g Gomega, ns, name, value string) {
	obj := newExample(ns, name)
	patch := fmt.Sprintf(`{"spec":{"field":%q}}`, value)
	g.Expect(k8s.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// watchBound is the watch inactivity bound of the outage scenarios'
// operator: long enough that no watch is restarted during 2b's stall, short
// enough for 2d to wait it out.
const watchBound = 5 * time.Second

func TestTheOperatorRecoversFromAnOutageAndStalledWatchesWithoutARestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	px := newProxy(t, 21)
	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, calls.recording(), handlers.ID("create"))
	handlers.OnUpdate(reg, calls.recording(), handlers.ID("update"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("delete"))
	op := runOperator(t, throughProxy(px, 20, 30), ns, reg, func(o *envtest.OperatorOptions) { o.WatchInactivityTimeout = watchBound })
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	updated := func(name string) func(g Gomega) any {
		return func(g Gomega) any { return field(rawObject(g, key(name)), "status", "update", "field") }
	}

	for _, name := range []string{"steady", "doomed"} {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue())
	}

	// 2a: the API server goes away for a while; things change meanwhile.
	const outage = 5 * time.Second
	px.Outage()
	patchField(g, ns, "steady", "changed while down")
	g.Expect(k8s.Create(ctx, newExample(ns, "born"))).To(Succeed())
	g.Expect(k8s.Delete(ctx, newExample(ns, "doomed"))).To(Succeed())
	<-time.After(outage) // the fault lasts this long
	px.Restore()
	restored := time.Now()
	g.Eventually(updated("steady"), timeout).Should(Equal("changed while down"))
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key("born"))) }, timeout).Should(BeTrue())
	g.Expect(envtest.WaitGone(ctx, k8s, newExample(ns, "doomed"))).To(Succeed())
	recovered := time.Since(restored)
	g.Expect(calls.of("delete", "doomed")).To(HaveLen(1))
	g.Expect(op.Done()).NotTo(BeClosed(), "the same operator recovered, without a restart")
	// client-go's reflector retries with a backoff capped at 30 s.
	g.Expect(recovered).To(BeNumerically("<", 45*time.Second))
	record(t, "2a", outcome{Objects: 3, Outcome: "held", Figures: fmt.Sprintf(
		"all three changes handled %s after the API server came back, by the same operator", seconds(recovered))})

	// 2b: watch streams go silent; what they held back arrives late.
	const silence = 2 * time.Second
	px.StallWatches()
	patchField(g, ns, "steady", "changed during a stall")
	g.Consistently(updated("steady"), silence).Should(Equal("changed while down"), "the stall hides the change")
	px.ReleaseWatches()
	released := time.Now()
	g.Eventually(updated("steady"), timeout).Should(Equal("changed during a stall"))
	record(t, "2b", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"blind for the %s of the stall (as expected); handled %s after the release", seconds(silence), seconds(time.Since(released)))})

	// 2c: the streams stall and then end, dropping what they held; the
	// operator watches again from the last version it saw.
	px.StallWatches()
	patchField(g, ns, "steady", "changed during a stall that ended")
	g.Consistently(updated("steady"), silence).Should(Equal("changed during a stall"))
	var watchTimeouts []int
	for _, w := range px.OpenWatches() {
		if strings.HasSuffix(w.Path, "/kopfexamples") {
			watchTimeouts = append(watchTimeouts, w.TimeoutSeconds)
		}
	}
	g.Expect(watchTimeouts).NotTo(BeEmpty(), "the operator watches kopfexamples")
	px.EndWatches()
	ended := time.Now()
	g.Eventually(updated("steady"), timeout).Should(Equal("changed during a stall that ended"))
	record(t, "2c", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"the change dropped with the stream was handled %s after the streams ended (the API server replays from the last version seen)", seconds(time.Since(ended)))})

	// 2d: the open streams go silent for good, as on a connection whose
	// path to the API server was lost; nothing ends them but the operator's
	// watch inactivity bound (watchBound here, 2 minutes by default), after
	// which it watches again from the last version it saw.
	px.SilenceOpenWatches()
	silenced := time.Now()
	patchField(g, ns, "steady", "changed during a silent stall")
	g.Eventually(updated("steady"), watchBound+timeout).Should(Equal("changed during a silent stall"))
	blind := time.Since(silenced)
	g.Expect(blind).To(BeNumerically("<", watchBound+timeout))
	relists := 0
	for _, r := range px.Requests() {
		if r.At.After(silenced) && !r.Watch && r.Method == "GET" && strings.HasSuffix(r.Path, "/kopfexamples") {
			relists++
		}
	}
	g.Expect(relists).To(BeZero(), "the watch resumed from its resourceVersion, without a new list")
	record(t, "2d", outcome{Objects: 1, Outcome: "held", Figures: fmt.Sprintf(
		"with the bound set to %s, the change was handled %s after the streams went silent, by a new watch from the last version seen (%d lists); "+
			"the default bound is 2 min, where client-go alone waits for the watch timeout it asked for (%d to %d s)",
		seconds(watchBound), seconds(blind), relists, slices.Min(watchTimeouts), slices.Max(watchTimeouts))})

	g.Expect(calls.of("create", "steady")).To(HaveLen(1))
	g.Expect(calls.of("update", "steady")).To(HaveLen(4))
}
