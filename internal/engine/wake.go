package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// WakeUp makes the controller reconcile one object again.
func (k *KindController) WakeUp(ctx context.Context, obj client.Object) {
	go func() {
		select {
		case k.Wake <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
		}
	}()
}

// WakeAll reconciles every object of the kind in the cache, e.g. after a
// pause, and those outside a narrowed cache that gopf still holds (see
// FindLeft).
func (k *KindController) WakeAll(ctx context.Context) {
	k.wakeLeft(ctx)
	list, err := k.newList()
	if err == nil {
		err = k.Cache.List(ctx, list)
	}
	if err != nil {
		k.Log.Error(err, "listing objects to handle them again")
		return
	}
	_ = forEachItem(list, func(obj client.Object) { k.WakeUp(ctx, obj) })
}

// newList returns an empty list of the kind, in the Go type the controller
// reads objects into.
func (k *KindController) newList() (client.ObjectList, error) {
	listGVK := k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List")
	if _, ok := k.NewObject().(*unstructured.Unstructured); ok {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l, nil
	}
	obj, err := k.scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	list, _ := obj.(client.ObjectList)
	return list, nil
}

// forEachItem calls fn with every item of a list.
func forEachItem(list client.ObjectList, fn func(client.Object)) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			fn(obj)
		}
	}
	return nil
}
