package reconcile_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
)

const timeout = 30 * time.Second

func newExample(ns, name string) *kopfv1.KopfExample {
	return &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
	}
}

// statusField reads status.<path> of a KopfExample straight from the API server.
func statusField(g Gomega, key types.NamespacedName, path ...string) any {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kopfv1.GroupVersion.WithKind("KopfExample"))
	g.Expect(k8s.Get(context.Background(), key, u)).To(Succeed())
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, append([]string{"status"}, path...)...)
	return v
}

// statusTrue reports whether the object's status holds true at path.
func statusTrue(g Gomega, key types.NamespacedName, path ...string) bool {
	v, _ := statusField(g, key, path...).(bool)
	return v
}

// reconcileCount is controller-runtime's count of finished reconciles of a controller.
func reconcileCount(g Gomega, controller string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func TestCreateHandlerRunsOnceAndStoresItsResultInStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls atomic.Int32
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.Add(1)
		if c.Reason != handlers.ReasonCreate || c.Name != obj.Name || obj.Spec.Field != "value" {
			t.Errorf("unexpected call: reason %q, name %q, field %q", c.Reason, c.Name, obj.Spec.Field)
		}
		return map[string]any{"message": "hello world"}, nil
	})
	runOperator(t, ns, reg)

	obj := newExample(ns, "kopf-example-1")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(func(g Gomega) any { return statusField(g, key, "create_fn", "message") }, timeout).Should(Equal("hello world"))

	// A further change reconciles the object again without calling the
	// create handler again.
	before := reconcileCount(g, "gopf-kopfexample.kopf.dev")
	g.Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) float64 { return reconcileCount(g, "gopf-kopfexample.kopf.dev") }, timeout).Should(BeNumerically(">", before))
	g.Expect(calls.Load()).To(Equal(int32(1)))
	g.Expect(statusField(g, key, "gopf", "lastHandled")).To(ContainSubstring(`"field":"value"`))
}

func TestCreateHandlerOfUnstructuredObjectsByResourceName(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		return map[string]any{"seen": field}, nil
	}, handlers.ForResource("kopfexamples.kopf.dev"), handlers.ID("unstructured_fn"))
	runOperator(t, ns, reg)

	obj := newExample(ns, "unstructured")
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) any {
		return statusField(g, client.ObjectKeyFromObject(obj), "unstructured_fn", "seen")
	}, timeout).Should(Equal("value"))
}

func TestBadRegistrationsFailAtSetupNamingTheHandler(t *testing.T) {
	noop := func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return nil, nil
	}
	cases := map[string]struct {
		register func(*handlers.Registry)
		want     []string
	}{
		"nil function": {
			register: func(r *handlers.Registry) { handlers.OnCreate[*kopfv1.KopfExample](r, nil, handlers.ID("broken")) },
			want:     []string{`"broken"`, "nil", "create_test.go"},
		},
		"unknown resource": {
			register: func(r *handlers.Registry) { handlers.OnCreate(r, noop, handlers.ForResource("widgets.nope.dev")) },
			want:     []string{`"create_fn"`, "widgets.nope.dev"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reg := handlers.NewRegistry()
			tc.register(reg)
			_, err := envtestOperatorError(reg)
			if err == nil {
				t.Fatal("the operator started; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// envtestOperatorError sets reg up on a manager and returns Setup's error.
func envtestOperatorError(reg *handlers.Registry) (bool, error) {
	mgr, err := newManager()
	if err != nil {
		return false, err
	}
	err = reconcile.Setup(mgr, reg, reconcile.Options{})
	return err == nil, err
}
