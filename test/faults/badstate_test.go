package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// landedWrites counts the writes to the object named name that px
// forwarded and the API server accepted.
func landedWrites(px *faults.Proxy, name string) int {
	n := 0
	for _, r := range px.Requests() {
		if _, of := r.Resource(); r.Write() && of == name && r.Status < http.StatusBadRequest {
			n++
		}
	}
	return n
}

// annotationJSON is a merge patch that sets annotations.
func annotationJSON(g Gomega, values map[string]any) client.Patch {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": values}})
	g.Expect(err).NotTo(HaveOccurred())
	return mergePatch(string(data))
}

// An object with unreadable gopf state beside sound state (gopf's other
// place, or Kopf's) is healed by one write of the state, so that the next
// start finds nothing to report, and no handler runs again.
func TestUnreadableStateBesideSoundStateIsHealedByOneWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("create"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("cm_create"), handlers.Labels{"faults": "bad-input"})
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	examples := []string{"beside-annotations", "beside-kopf"}
	const cmName = "cm-beside-kopf"

	first := runOperator(t, cfg, ns, reg)
	for _, name := range examples {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	g.Expect(k8s.Create(ctx, newConfigMap(ns, cmName, map[string]string{"v": "1"}))).To(Succeed())
	for _, name := range examples {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue())
	}
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, cmName) }, timeout).Should(BeTrue())
	g.Expect(first.Stop()).To(Succeed())

	// The sound state moves to the other place (gopf's annotations, or
	// Kopf's), and gopf's place gets garbage.
	essence := map[string]string{}
	for _, name := range examples {
		essence[name], _ = field(rawObject(g, key(name)), "status", "gopf", "lastHandled").(string)
	}
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, key(cmName), &cm)).To(Succeed())
	essence[cmName] = cm.Annotations["gopf.dev/last-handled-configuration"]
	inAnnotations := annotationJSON(g, map[string]any{"gopf.dev/last-handled-configuration": essence["beside-annotations"]})
	g.Expect(k8s.Patch(ctx, newExample(ns, "beside-annotations"), inAnnotations)).To(Succeed())
	g.Expect(k8s.Status().Patch(ctx, newExample(ns, "beside-annotations"), mergePatch(`{"status":{"gopf":"garbage"}}`))).To(Succeed())
	g.Expect(k8s.Patch(ctx, newExample(ns, "beside-kopf"), annotationJSON(g, map[string]any{"kopf.zalando.org/last-handled-configuration": essence["beside-kopf"]}))).To(Succeed())
	g.Expect(k8s.Status().Patch(ctx, newExample(ns, "beside-kopf"), mergePatch(`{"status":{"gopf":{"lastHandled":"not json"}}}`))).To(Succeed())
	g.Expect(k8s.Patch(ctx, newConfigMap(ns, cmName, nil), annotationJSON(g, map[string]any{
		"kopf.zalando.org/last-handled-configuration": essence[cmName], "gopf.dev/last-handled-configuration": "{{{"}))).To(Succeed())

	// The next start reports each and heals it: gopf's place holds the
	// state, the copies elsewhere are gone, no handler ran again.
	px := newProxy(t, 61)
	second := runOperator(t, throughProxy(px, -1, 0), ns, reg)
	for _, name := range append(examples, cmName) {
		g.Eventually(func() []string { return logs.Find("ignores its stored state", name) }, timeout).ShouldNot(BeEmpty(), name)
	}
	for _, name := range examples {
		g.Eventually(func(g Gomega) {
			obj := rawObject(g, key(name))
			g.Expect(field(obj, "status", "gopf", "lastHandled")).To(Equal(essence[name]))
			annotations, _ := field(obj, "metadata", "annotations").(map[string]any)
			g.Expect(annotations).NotTo(Or(HaveKey("gopf.dev/last-handled-configuration"), HaveKey("kopf.zalando.org/last-handled-configuration")))
		}, timeout).Should(Succeed(), name)
	}
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(k8s.Get(ctx, key(cmName), &cm)).To(Succeed())
		return cm.Annotations
	}, timeout).Should(And(HaveKeyWithValue("gopf.dev/last-handled-configuration", essence[cmName]), Not(HaveKey("kopf.zalando.org/last-handled-configuration"))))
	g.Expect(second.Stop()).To(Succeed())
	// One write each: the status patch, and for a status kind the object
	// patch that removes the copy in annotations.
	wrote := map[string]int{}
	for _, name := range append(examples, cmName) {
		wrote[name] = landedWrites(px, name)
	}
	g.Expect(wrote).To(Equal(map[string]int{"beside-annotations": 2, "beside-kopf": 2, cmName: 1}))

	// The start after that finds nothing to report and writes nothing.
	reported := map[string]int{}
	for _, name := range append(examples, cmName) {
		reported[name] = len(logs.Find("ignores its stored state", name))
	}
	px3 := newProxy(t, 62)
	runOperator(t, throughProxy(px3, -1, 0), ns, reg)
	g.Expect(k8s.Create(ctx, newExample(ns, "after"))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key("after"))) }, timeout).Should(BeTrue())
	g.Consistently(func() map[string]int {
		now := map[string]int{}
		for _, name := range append(examples, cmName) {
			now[name] = len(logs.Find("ignores its stored state", name)) + 100*landedWrites(px3, name)
		}
		return now
	}, 2*time.Second).Should(Equal(reported))
	for _, name := range examples {
		g.Expect(calls.of("create", name)).To(HaveLen(1), name)
	}
	g.Expect(calls.of("cm_create", cmName)).To(HaveLen(1))
	record(t, "6i", outcome{Objects: 4, Outcome: "held: healed by one write", Figures: joinf(
		fmt.Sprintf("the restart reported each once and wrote the state once (requests: %d, %d for the KopfExamples (status and annotations), %d for the ConfigMap)", wrote["beside-annotations"], wrote["beside-kopf"], wrote[cmName]),
		"the copies in gopf's annotations and Kopf's were removed; no handler ran again",
		"the next start reported nothing and wrote nothing")})
}
