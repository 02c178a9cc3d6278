package logs

import (
	"io"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestRequestLoggersCarryControllerRuntimesValuesOnlyOnceTheyWrite(t *testing.T) {
	var lines []string
	base := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{LogCaller: funcr.All})

	rl := Reconciles(base, "KopfExample")(&reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}})
	rl = rl.WithValues("reconcileID", "r1") // as controller-runtime's controller adds it
	handler := WithValuesLazily(rl, "handler", "h1")
	if _, nested := handler.GetSink().(*lazySink).parent.(*lazySink); nested {
		t.Fatal("a lazy logger was wrapped in another: its lines would name the wrong caller")
	}
	if sink := handler.GetSink().(*lazySink); sink.sink != nil {
		t.Fatal("values were added before a line was written")
	}
	handler.Info("done")
	want := []string{`"KopfExample"={"name"="a" "namespace"="ns"}`, `"namespace"="ns"`, `"name"="a"`, `"reconcileID"="r1"`, `"handler"="h1"`, "requests_test.go"}
	if len(lines) != 1 {
		t.Fatalf("lines = %q, want one", lines)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("line %q lacks %s", lines[0], w)
		}
	}

	lines = nil
	req := &admission.Request{}
	req.Namespace, req.Name, req.UID = "ns", "b", "u1"
	req.Resource = metav1.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}
	req.UserInfo = authenticationv1.UserInfo{Username: "alice"}
	Admissions(base, req).Info("let through")
	for _, w := range []string{`"object"={"name"="b" "namespace"="ns"}`, `"user"="alice"`, `"requestID"="u1"`, `"resource"={`} {
		if len(lines) != 1 || !strings.Contains(lines[0], w) {
			t.Errorf("lines = %q, want one with %s", lines, w)
		}
	}
	if got := Admissions(base, nil); got != base {
		t.Error("the logger for no request is not the base")
	}
	if got := Reconciles(base, "KopfExample")(nil); got != base {
		t.Error("the logger for no request is not the base")
	}
}

// BenchmarkReconcileLoggers compares, on zap as Main sets it up, the
// logger of a reconcile that writes no line: controller-runtime's own
// constructor and gopf's.
func BenchmarkReconcileLoggers(b *testing.B) {
	base := zap.New(zap.WriteTo(io.Discard))
	req := &reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b.Run("controller-runtime", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := base.WithValues("KopfExample", klog.KRef(req.Namespace, req.Name)).WithValues("namespace", req.Namespace, "name", req.Name)
			sink = l.WithValues("reconcileID", "r1")
		}
	})
	b.Run("gopf", func(b *testing.B) {
		b.ReportAllocs()
		mk := Reconciles(base, "KopfExample")
		for b.Loop() {
			sink = mk(req).WithValues("reconcileID", "r1")
		}
	})
}

var sink logr.Logger
