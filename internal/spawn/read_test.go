package spawn

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestTheSpawnerReadsOnlyTheObjectItWasGiven(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}, Data: map[string]string{"k": "v"}}
	s := New(&kind{}, configMaps(logr.Discard(), obj))
	s.ctx = context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "o"}
	got, ok := s.read(key, "u1").(*corev1.ConfigMap)
	if !ok || got.Data["k"] != "v" {
		t.Errorf("read of the object synced: %v, want the cache's copy", got)
	}
	if got := s.read(key, "u2"); got != nil {
		t.Errorf("read of an object deleted and created again: %v, want nil", got)
	}
	if got := s.read(types.NamespacedName{Namespace: "ns", Name: "gone"}, "u3"); got != nil {
		t.Errorf("read of an object the cache does not hold: %v, want nil", got)
	}
}

func TestADaemonsIdentityIsTheObjectsMetadataAndNothingElse(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1", ResourceVersion: "7",
		Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"}}, Data: map[string]string{"k": "v"}}
	s := New(&kind{}, configMaps(logr.Discard()))
	id, ok := s.identity(obj).(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("identity is a %T, want the kind's Go type", s.identity(obj))
	}
	if id.Name != "o" || id.Namespace != "ns" || id.UID != "u1" || id.ResourceVersion != "7" || id.Labels["l"] != "1" || id.Annotations["a"] != "2" {
		t.Errorf("identity %+v does not identify the object", id.ObjectMeta)
	}
	if id.Data != nil {
		t.Errorf("identity keeps the object's content: %v", id.Data)
	}
	obj.Labels["l"], obj.Annotations["a"] = "changed", "changed"
	if id.Labels["l"] != "1" || id.Annotations["a"] != "2" {
		t.Errorf("identity shares its labels or annotations with the object: %v %v", id.Labels, id.Annotations)
	}
}

func TestAnObjectsTimersAreFoundByIDAndDroppedFromTheQueue(t *testing.T) {
	s := New(&kind{}, configMaps(logr.Discard()))
	a, b := newTestTimer("a"), newTestTimer("b")
	o := &spawned{timers: []*timerState{a, b}}
	if o.timer("a") != a || o.timer("b") != b || o.timer("c") != nil {
		t.Fatalf("timer by id: %v %v %v", o.timer("a"), o.timer("b"), o.timer("c"))
	}
	s.queue.add(a, time.Now())
	s.dropTimersLocked(o, func(t *timerState) bool { return t == a })
	if o.timer("a") != nil || o.timer("b") != b || len(o.timers) != 1 {
		t.Errorf("after dropping a: %v", o.timers)
	}
	if got, _ := s.queue.next(time.Now().Add(time.Hour)); got != nil {
		t.Errorf("a dropped timer is still queued: %v", got.key)
	}
}

// seeingKind is a kind whose calls send what the object's Data said.
type seeingKind struct {
	kind
	seen chan string
}

func (k *seeingKind) Call(_ context.Context, _ *contract.Handler, obj client.Object, _ *handlers.Cause) (any, error) {
	k.seen <- obj.(*corev1.ConfigMap).Data["k"]
	return nil, nil
}

// The spawner keeps no copy of the object: a run reads the newest version
// in the cache, even one no reconcile has synced yet.
func TestATimerRunsOnTheNewestObjectInTheCache(t *testing.T) {
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Millisecond, func(context.Context, *corev1.ConfigMap, *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("t"))
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}, Data: map[string]string{"k": "old"}}
	opts := configMaps(logr.Discard(), obj)
	k := &seeingKind{seen: make(chan string)}
	s := New(k, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		stopped := make(chan struct{})
		defer close(stopped)
		go func() { // a run under way when the spawner stops
			for {
				select {
				case <-k.seen:
				case <-stopped:
					return
				}
			}
		}()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	s.Sync(types.NamespacedName{Namespace: "ns", Name: "o"}, obj, "{}", contract.SetOf(reg).Handlers(spec.KindTimer))
	waitFor(t, k.seen, "old")
	changed := obj.DeepCopy()
	changed.Data["k"] = "new"
	if err := opts.Reader.(client.Client).Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k.seen, "new")
}

// waitFor waits until a run sees want.
func waitFor(t *testing.T, seen <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-seen:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no run saw %q", want)
		}
	}
}
