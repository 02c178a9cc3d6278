package gopf_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

func TestTheManagersCacheDropsManagedFieldsUnlessToldToKeepThem(t *testing.T) {
	cp, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	admin, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "managed"}, Data: map[string]string{"a": "b"}}
	if err := admin.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) == 0 {
		t.Fatal("the API server set no managedFields; the test shows nothing")
	}

	for _, keep := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		mgr, err := gopf.NewManager(cp.Config, handlers.NewRegistry(), gopf.ManagerOptions{KeepManagedFields: keep, SkipNameValidation: true})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- mgr.Start(ctx) }()
		var cached corev1.ConfigMap
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			err = errors.New("the cache did not start")
		} else {
			err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &cached) // through the cache
		}
		cancel()
		if stopErr := <-stopped; stopErr != nil {
			t.Errorf("KeepManagedFields %v: the manager stopped with %v", keep, stopErr)
		}
		switch {
		case err != nil:
			t.Errorf("KeepManagedFields %v: reading from the cache: %v", keep, err)
		case keep && len(cached.ManagedFields) == 0:
			t.Error("KeepManagedFields true: the cached object has no managedFields")
		case !keep && len(cached.ManagedFields) != 0:
			t.Errorf("by default the cached object still has managedFields: %v", cached.ManagedFields)
		}
		if cached.Data["a"] != "b" {
			t.Errorf("KeepManagedFields %v: the cached object lost its data: %v", keep, cached.Data)
		}
	}
}
