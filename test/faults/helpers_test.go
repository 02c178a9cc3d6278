package faults_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/faults"
)

// timeout bounds every wait for something that must happen. Generous: the
// suite runs with the race detector on two cores.
const timeout = 60 * time.Second

// newNamespace creates a namespace for one scenario, deleted when it ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	return envtest.New(t, scheme).Namespace
}

// newProxy starts a fault proxy in front of the control plane and closes it
// when the test ends.
func newProxy(t *testing.T, seed uint64) *faults.Proxy {
	t.Helper()
	px, err := faults.New(cfg, seed)
	if err != nil {
		t.Fatalf("starting the fault proxy: %v", err)
	}
	t.Cleanup(func() {
		if err := px.Close(); err != nil {
			t.Errorf("closing the fault proxy: %v", err)
		}
	})
	return px
}

// throughProxy is an operator's client configuration through px, with the
// client-side rate limit qps/burst (qps -1: none, as ctrl.GetConfig gives
// gopf.Main).
func throughProxy(px *faults.Proxy, qps float32, burst int) *rest.Config {
	c := px.Config()
	c.QPS, c.Burst = qps, burst
	return c
}

// runOperator runs reg in namespace ns with the client configuration c and
// stops it when the test ends (unless the test stopped it already).
func runOperator(t *testing.T, c *rest.Config, ns string, reg *handlers.Registry, opts ...func(*envtest.OperatorOptions)) *envtest.Operator {
	t.Helper()
	o := envtest.OperatorOptions{Scheme: scheme, Namespaces: []string{ns}}
	for _, f := range opts {
		f(&o)
	}
	op, err := envtest.RunOperator(context.Background(), c, reg, o)
	if err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
	t.Cleanup(func() { _ = op.Stop() })
	return op
}

// newExample returns a KopfExample as Kopf's sample has it.
func newExample(ns, name string) *kopfv1.KopfExample {
	return &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
	}
}

// exampleNames returns n names with a prefix: prefix-000, prefix-001, ...
func exampleNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// rawObject reads a KopfExample straight from the API server as JSON-like
// maps.
func rawObject(g Gomega, key types.NamespacedName) map[string]any {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	g.Expect(k8s.Get(context.Background(), key, u)).To(Succeed())
	return u.Object
}

// field returns the value at a path of a JSON-like object, nil if absent.
func field(obj map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}

// isTrue reports whether v is the boolean true (BeTrue fails on nil by
// panicking).
func isTrue(v any) bool {
	b, _ := v.(bool)
	return b
}

// handled reports whether gopf has finished handling the object's last
// change: an essence is stored and no handler is unfinished.
func handled(obj map[string]any) bool {
	last, _ := field(obj, "status", "gopf", "lastHandled").(string)
	progress, _ := field(obj, "status", "gopf", "progress").(map[string]any)
	return last != "" && len(progress) == 0
}

// eventReasons lists the reasons of the Events about an object.
func eventReasons(g Gomega, obj client.Object) []string {
	events, err := envtest.Events(context.Background(), k8s, obj)
	g.Expect(err).NotTo(HaveOccurred())
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

// eventNotes lists "reason: note" of the Events about an object.
func eventNotes(g Gomega, obj client.Object) []string {
	events, err := envtest.Events(context.Background(), k8s, obj)
	g.Expect(err).NotTo(HaveOccurred())
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Reason+": "+e.Note)
	}
	return out
}

// call is one handler call, as a callLog keeps it.
type call struct {
	Handler string
	Name    string
	Reason  handlers.Reason
	Retry   int
	At      time.Time
	By      string // which operator, where a scenario runs several
}

// callLog records handler calls. It is safe for concurrent use.
type callLog struct {
	mu    sync.Mutex
	calls []call
}

// add notes a call of the handler c is for, made by operator by.
func (l *callLog) add(c *handlers.Cause, by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call{Handler: c.HandlerID, Name: c.Name, Reason: c.Reason, Retry: c.Retry, At: time.Now(), By: by})
}

// recording is a handler that notes its call in l and returns the
// object's spec.field as its result.
func (l *callLog) recording() handlers.HandlerFunc[*kopfv1.KopfExample] {
	return func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		l.add(c, "")
		return map[string]any{"field": obj.Spec.Field}, nil
	}
}

// of returns the calls of a handler for one object, in order.
func (l *callLog) of(handler, name string) []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []call
	for _, c := range l.calls {
		if c.Handler == handler && c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// retries returns the Retry numbers of a handler's calls for one object.
func (l *callLog) retries(handler, name string) []int {
	var out []int
	for _, c := range l.of(handler, name) {
		out = append(out, c.Retry)
	}
	return out
}

// retriesBy returns the Retry numbers of the calls operator by made to a
// handler for one object.
func (l *callLog) retriesBy(handler, name, by string) []int {
	var out []int
	for _, c := range l.of(handler, name) {
		if c.By == by {
			out = append(out, c.Retry)
		}
	}
	return out
}

// perObject counts a handler's calls by object.
func (l *callLog) perObject(handler string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, c := range l.calls {
		if c.Handler == handler {
			out[c.Name]++
		}
	}
	return out
}

// count counts a handler's calls.
func (l *callLog) count(handler string) int {
	n := 0
	for _, v := range l.perObject(handler) {
		n += v
	}
	return n
}

// seconds formats a duration as seconds with one decimal.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// sortedKeys returns the keys of a map, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// joinf joins formatted parts with "; ".
func joinf(parts ...string) string { return strings.Join(parts, "; ") }
