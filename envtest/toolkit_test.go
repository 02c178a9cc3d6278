package envtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

var scheme = runtime.NewScheme()

func TestMain(m *testing.M) {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kopfv1.AddToScheme(scheme)
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../config/crd/bases"}})
}

// recorded returns a registry whose handlers are recorded in calls (the
// create handler also posts an Event).
func recorded(calls *envtest.Calls) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		c.Info("Created", "seen by the test")
		return map[string]any{"ok": true}, nil
	}, handlers.ID("create"))
	handlers.OnResume(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		return nil, nil
	}, handlers.ID("resume"))
	return reg
}

func TestTheToolkitWaitsCollectsAndRestarts(t *testing.T) {
	g := NewWithT(t)
	calls := &envtest.Calls{}
	env := envtest.Run(t, recorded(calls), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s := env.Ctx, env.Client

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "toolkit"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["create"].Raw != nil })).To(Succeed())
	g.Expect(calls.WaitCount(ctx, "create", 1)).To(Succeed())
	g.Expect(calls.Of("create")[0].Name).To(Equal("toolkit"))

	g.Eventually(func(g Gomega) []string {
		events, err := envtest.Events(ctx, k8s, obj)
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for _, e := range events {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}, 10*time.Second).Should(ContainElement("Created"))

	first := env.Operator
	g.Expect(env.Restart()).To(BeIdenticalTo(env.Operator))
	g.Expect(first.Done()).To(BeClosed(), "the first operator stopped")
	g.Expect(calls.WaitCount(ctx, "resume", 1)).To(Succeed(), "a restarted operator resumes handled objects")
	g.Expect(calls.Count("create")).To(Equal(1))

	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, obj)).To(Succeed())

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	g.Expect(envtest.WaitFor(short, k8s, obj, func(*kopfv1.KopfExample) bool { return true })).
		To(MatchError(ContainSubstring("waiting for " + env.Namespace + "/toolkit")))
	g.Expect(calls.WaitCount(short, "never", 1)).To(MatchError(ContainSubstring(`handler "never" was called 0 times`)))
}

func TestEachTestGetsItsOwnNamespaceAndTheOperatorStaysInIt(t *testing.T) {
	g := NewWithT(t)
	calls := &envtest.Calls{}
	env := envtest.Run(t, recorded(calls), envtest.OperatorOptions{Scheme: scheme})
	other := envtest.New(t, scheme)
	g.Expect(env.Namespace).To(HavePrefix("eachtestgetsitsownnamespace"))
	g.Expect(other.Namespace).NotTo(Equal(env.Namespace))
	g.Expect(other.Operator).To(BeNil())

	outside := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: other.Namespace, Name: "outside"}}
	g.Expect(other.Client.Create(other.Ctx, outside)).To(Succeed())
	inside := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "inside"}}
	g.Expect(env.Client.Create(env.Ctx, inside)).To(Succeed())
	g.Expect(calls.WaitCount(env.Ctx, "create", 1)).To(Succeed())
	g.Consistently(func() int { return calls.Count("create") }, time.Second).Should(Equal(1))
	g.Expect(calls.Of("create")[0].Namespace).To(Equal(env.Namespace))
}

func TestWaitForSaysWhatTheHandlersLastReported(t *testing.T) {
	g := NewWithT(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		var m map[string]int
		m["boom"]++ //nolint:staticcheck // SA5000: a nil map, so the handler panics on purpose
		return nil, nil
	}, handlers.ID("panicking"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Permanent(errors.New("the spec is wrong"))
	}, handlers.ID("refusing"))
	env := envtest.Run(t, reg, envtest.OperatorOptions{Scheme: scheme})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "failing"}}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	// A panic is retried, after envtest.DefaultBackoff in a test operator:
	// several attempts fit into a short wait, and the wait's error quotes
	// the last one.
	ctx, cancel := context.WithTimeout(env.Ctx, 5*envtest.DefaultBackoff)
	defer cancel()
	err := envtest.WaitFor(ctx, env.Client, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["panicking"].Raw != nil })
	g.Expect(err).To(MatchError(ContainSubstring("the condition never held")))
	g.Expect(err).To(MatchError(ContainSubstring("gopf's progress in status.gopf.progress")))
	g.Expect(err).To(MatchError(MatchRegexp(`\n  handler "panicking": [2-9] attempts failed so far, the next at [^;]+; last error: handler "panicking" panicked .*: assignment to entry in nil map\n`)))
	g.Expect(err).To(MatchError(MatchRegexp(`\n  handler "refusing" failed for good after 1 attempt: .*the spec is wrong$`)))
}

func TestTestOperatorsRetryAfterAShortBackoff(t *testing.T) {
	g := NewWithT(t)
	calls := &envtest.Calls{}
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Record(c)
		if c.Retry == 0 {
			return nil, errors.New("not yet") // says nothing of when to retry
		}
		return map[string]any{"attempts": c.Retry + 1}, nil
	}, handlers.ID("flaky"))
	env := envtest.Run(t, reg, envtest.OperatorOptions{Scheme: scheme})

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "flaky"}}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	ctx, cancel := context.WithTimeout(env.Ctx, 10*envtest.DefaultBackoff) // an operator's 60 s would not fit
	defer cancel()
	g.Expect(envtest.WaitFor(ctx, env.Client, obj, func(o *kopfv1.KopfExample) bool { return o.Status.Extra["flaky"].Raw != nil })).To(Succeed())
	g.Expect(string(obj.Status.Extra["flaky"].Raw)).To(MatchJSON(`{"attempts":2}`))
	g.Expect(calls.Count("flaky")).To(Equal(2))
}

func TestTestOperatorsTakeNamespacePatternsAsMainDoes(t *testing.T) {
	g := NewWithT(t)
	calls := &envtest.Calls{}
	env := envtest.New(t, scheme)
	// A pattern, not a name: the cache watches the cluster and the engine
	// picks the namespaces, including those created after the start.
	env.Start(recorded(calls), envtest.OperatorOptions{Namespaces: []string{env.Namespace + "-*"}})

	later := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace + "-later"}}
	g.Expect(env.Client.Create(env.Ctx, later)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), later) })
	outside := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "outside"}}
	g.Expect(env.Client.Create(env.Ctx, outside)).To(Succeed())
	inside := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: later.Name, Name: "inside"}}
	g.Expect(env.Client.Create(env.Ctx, inside)).To(Succeed())

	g.Expect(calls.WaitCount(env.Ctx, "create", 1)).To(Succeed())
	g.Consistently(func() int { return calls.Count("create") }, time.Second).Should(Equal(1))
	g.Expect(calls.Of("create")[0].Namespace).To(Equal(later.Name))
}
