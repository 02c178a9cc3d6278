package spawn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

// kind is a Kind that calls nothing and counts running handlers.
type kind struct{ busy atomic.Int64 }

func (*kind) ObjectFor(_ *contract.Handler, obj client.Object) (client.Object, error) {
	return obj, nil
}
func (*kind) Cause(*contract.Handler, client.Object, logr.Logger) *handlers.Cause {
	return &handlers.Cause{}
}
func (*kind) Call(context.Context, *contract.Handler, client.Object, *handlers.Cause) (any, error) {
	return nil, nil
}
func (*kind) SendPatch(context.Context, client.Object, *spec.Patch) error { return nil }
func (*kind) FailedForGood(client.Object, string, error)                  {}
func (*kind) WakeUp(context.Context, client.Object)                       {}
func (*kind) Open() bool                                                  { return true }
func (*kind) WhenPaused(func())                                           {}
func (*kind) Stopping() bool                                              { return false }
func (k *kind) AddBusy(delta int64)                                       { k.busy.Add(delta) }

// configMaps is the options of a spawner of ConfigMaps whose cache holds
// objs.
func configMaps(log logr.Logger, objs ...client.Object) Options {
	return Options{Name: "configmaps", Log: log, Workers: 1, DefaultBackoff: time.Second,
		Reader:    fake.NewClientBuilder().WithObjects(objs...).Build(),
		NewObject: func() client.Object { return &corev1.ConfigMap{} }}
}

// run starts s until the test ends, and then checks that it stopped
// cleanly.
func run(t testing.TB, s *Spawner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// A reconcile that finishes after the manager stopped must not start a
// daemon: Start has already stopped those it knew, and nothing would stop
// the new one.
func TestNoDaemonStartsOnceTheManagerStopped(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnDaemon(reg, func(ctx context.Context, d *handlers.Daemon[*corev1.ConfigMap], c *handlers.Cause) error {
		<-d.Stopping()
		return nil
	}, handlers.ID("d"))
	daemons := contract.SetOf(reg).Handlers(spec.KindDaemon)
	k := &kind{}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late", UID: "u1"}}
	s := New(k, configMaps(logr.Discard(), obj))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.Sync(types.NamespacedName{Namespace: "ns", Name: "late"}, obj, "{}", daemons)
	if n := k.busy.Load(); n != 0 {
		t.Errorf("%d daemons started after the manager stopped", n)
	}
}

// TestMain fails the package if a test leaves a goroutine behind, such as a
// daemon nobody stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
