package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// pathLog keeps the paths of the changes update handlers saw. It is safe
// for concurrent use.
type pathLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *pathLog) add(d handlers.Diff) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range d {
		l.paths = append(l.paths, strings.Join(c.Path, "."))
	}
}

func (l *pathLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.paths...)
}

// sizeHandlers is the registry of the size scenarios: a create handler that
// returns result(obj), an update handler of spec.items, a delete handler
// (so that a finalizer holds the object), each noting its calls.
func sizeHandlers(calls *callLog, diffs *pathLog, result func(*kopfv1.KopfExample) any) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return result(obj), nil
	}, handlers.ID("create"))
	handlers.OnUpdate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		diffs.add(c.Diff)
		return nil, nil
	}, handlers.ID("items"), handlers.Field("spec.items"))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("delete"))
	return reg
}

// writesTo counts the operator's writes to one KopfExample.
func writesTo(px *faults.Proxy, name string) int {
	n := 0
	for _, r := range px.Requests() {
		if r.Write() && strings.Contains(r.Path, "/kopfexamples/"+name) {
			n++
		}
	}
	return n
}

// sizeRun is an operator running sizeHandlers through a proxy that counts
// its writes.
type sizeRun struct {
	g     *WithT
	ns    string
	px    *faults.Proxy
	calls callLog
	diffs pathLog
}

func startSizeRun(t *testing.T, seed uint64, result func(*kopfv1.KopfExample) any) *sizeRun {
	r := &sizeRun{g: NewWithT(t), ns: newNamespace(t), px: newProxy(t, seed)}
	runOperator(t, throughProxy(r.px, -1, 0), r.ns, sizeHandlers(&r.calls, &r.diffs, result))
	return r
}

// quietWrites checks that the operator makes no more writes to the object
// (at most the two of a create: finalizer, status) and returns their
// number.
func (r *sizeRun) quietWrites(name string) int {
	r.g.Consistently(func() int { return writesTo(r.px, name) }, 3*time.Second).Should(BeNumerically("<=", 2))
	r.g.Expect(r.calls.of("create", name)).To(HaveLen(1))
	return writesTo(r.px, name)
}

// deleted deletes the object and checks that it goes, after one call of
// its delete handler, and that no write was refused on the way.
func (r *sizeRun) deleted(name string) {
	ctx := context.Background()
	r.g.Expect(k8s.Delete(ctx, newExample(r.ns, name))).To(Succeed())
	r.g.Expect(envtest.WaitGone(ctx, k8s, newExample(r.ns, name))).To(Succeed())
	r.g.Expect(r.calls.of("delete", name)).To(HaveLen(1))
	r.g.Expect(r.calls.of("create", name)).To(HaveLen(1))
	r.g.Expect(logs.Find("request is too large")).To(BeEmpty())
}

func TestAnObjectNearTheSizeLimitIsHandledOnceWithACompactState(t *testing.T) {
	ctx := context.Background()
	r := startSizeRun(t, 61, func(*kopfv1.KopfExample) any { return map[string]any{"ok": true} })
	g, key := r.g, client.ObjectKey{Namespace: r.ns, Name: "huge"}

	obj := newExample(r.ns, "huge")
	obj.Spec.Field = strings.Repeat("x", 900*1024)
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return isTrue(field(rawObject(g, key), "status", "create", "ok")) }, timeout).Should(BeTrue())
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key)) }, timeout).Should(BeTrue())
	last, _ := field(rawObject(g, key), "status", "gopf", "lastHandled").(string)
	g.Expect(last).To(HavePrefix(`{"$gopf":{`), "a compact state")
	g.Expect(len(last)).To(BeNumerically("<", 1024))
	createWrites := r.quietWrites("huge")

	// A change of a named field is an update with that field's diff.
	g.Expect(k8s.Patch(ctx, newExample(r.ns, "huge"), mergePatch(`{"spec":{"items":["item1","item2","item3"]}}`))).To(Succeed())
	g.Eventually(func() int { return len(r.calls.of("items", "huge")) }, timeout).Should(Equal(1))
	g.Expect(r.diffs.get()).To(Equal([]string{""}), "the handler narrowed to spec.items sees its field's change")
	g.Eventually(func() int { return writesTo(r.px, "huge") }, timeout).Should(Equal(createWrites + 1))

	r.deleted("huge")
	record(t, "6g", outcome{Objects: 1, Outcome: "held", Figures: joinf(
		fmt.Sprintf("create handled once with %d writes (finalizer, status); the stored state is a %d-byte digest plus the fields handlers name, not a copy of the spec", createWrites, len(last)),
		"a change of spec.items was one update (its handler saw that field's change) and one write",
		"deleted normally (its delete handler ran once); no write refused")})
}

func TestAResultTooLargeToStoreIsAReportedFailureNotARetryStorm(t *testing.T) {
	r := startSizeRun(t, 62, func(*kopfv1.KopfExample) any {
		return map[string]any{"blob": strings.Repeat("y", 2<<20)}
	})
	g, key := r.g, client.ObjectKey{Namespace: r.ns, Name: "big-result"}

	g.Expect(k8s.Create(context.Background(), newExample(r.ns, "big-result"))).To(Succeed())
	g.Eventually(func(g Gomega) []string { return eventNotes(g, newExample(r.ns, "big-result")) }, timeout).Should(ContainElement(And(
		HavePrefix("HandlerFailed: "), ContainSubstring("cannot be stored in status.create"))))
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key)) }, timeout).Should(BeTrue())
	g.Expect(field(rawObject(g, key), "status", "create")).To(BeNil())
	writes := r.quietWrites("big-result")

	r.deleted("big-result")
	record(t, "6h", outcome{Objects: 1, Outcome: "held", Figures: joinf(
		fmt.Sprintf("the create handler ran once; its 2 MiB result was its permanent failure, a HandlerFailed Warning Event said why; %d writes (finalizer, state)", writes),
		"deleted normally (its delete handler ran once)")})
}
