package webhook

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

const storedConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns","uid":"u-1"}}`

func TestAdmissionHandlersGetTheObjectsMemoOrACopyOfTheOperatorsAndTheIndexes(t *testing.T) {
	reg := handlers.NewRegistry()
	type seen struct {
		memo   *spec.Memo
		client client.Client
		region any
		values []string
	}
	var calls []seen
	byPort := handlers.OnIndex(reg, "by_port", func(*corev1.Service, *handlers.Cause) map[int]string { return nil })
	handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
		calls = append(calls, seen{memo: (*spec.Memo)(a.Memo), client: a.Client, region: a.Memo.Get("region"), values: byPort.Get(a.Indexes, 8080)})
		a.Memo.Set("region", "set by "+string(a.Operation))
		return nil
	}, handlers.Operations(admissionv1.Create, admissionv1.Update))
	rv := reviewerFor(t, reg, false)

	set := contract.SetOf(reg)
	op := set.OperatorOf(t.Name())
	op.Memo.Set("region", "eu-1")
	spec.SetEntries(spec.AddIndex(op.Indexes, "by_port"), "ns/svc", map[any]any{8080: "svc"})
	objectMemo := &spec.Memo{}
	objectMemo.Set("region", "the object's")
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	op.AddObjectMemos(gvk, func(key types.NamespacedName, uid types.UID) *spec.Memo {
		if key == (types.NamespacedName{Namespace: "ns", Name: "cm"}) && uid == "u-1" {
			return objectMemo
		}
		return nil
	})
	managers := &struct{ client.Client }{} // stands for the manager's client
	for _, h := range rv.hooks {
		h.op, h.gvk, h.client = op, gvk, managers
	}

	for _, req := range []struct {
		op          admissionv1.Operation
		object, old string
	}{{admissionv1.Create, storedConfigMap, ""}, {admissionv1.Update, storedConfigMap, storedConfigMap}} {
		if resp := rv.Handle(context.Background(), request(req.op, req.object, req.old)); !resp.Allowed {
			t.Fatalf("%s denied: %v", req.op, resp.Result)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	if create := calls[0]; create.region != "eu-1" || create.memo == objectMemo || create.memo == op.Memo {
		t.Errorf("CREATE got memo %p with region %v; want a copy of the operator memo (eu-1)", create.memo, create.region)
	}
	if update := calls[1]; update.memo != objectMemo || update.region != "the object's" {
		t.Errorf("UPDATE got memo %p with region %v; want the object's memo %p", update.memo, update.region, objectMemo)
	}
	if got := op.Memo.Get("region"); got != "eu-1" {
		t.Errorf("the operator memo's region is %v after the handlers set theirs, want eu-1", got)
	}
	if got := objectMemo.Get("region"); got != "set by UPDATE" {
		t.Errorf("the object's memo has region %v, want what the UPDATE handler set", got)
	}
	for _, c := range calls {
		if c.client != managers {
			t.Errorf("the handler got client %v, want the manager's", c.client)
		}
		if len(c.values) != 1 || c.values[0] != "svc" {
			t.Errorf("the index under the int key 8080 gave %v, want [svc]", c.values)
		}
	}
}
