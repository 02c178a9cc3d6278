package outside

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// oneObject is a reader of the API server that holds at most one object.
type oneObject struct {
	client.Reader
	obj *corev1.ConfigMap
}

func (r oneObject) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.obj == nil || client.ObjectKeyFromObject(r.obj) != key {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	r.obj.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

// held is the memory of the objects gopf holds.
type held map[types.NamespacedName]types.UID

func (h held) Holding(key types.NamespacedName) types.UID   { return h[key] }
func (h held) Hold(key types.NamespacedName, uid types.UID) { h[key] = uid }

func TestOnlyAHeldObjectOutsideTheSelectorIsReadAsLeft(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "cm"}
	cm := func(uid types.UID, app string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: uid, Labels: map[string]string{"app": app}}}
	}
	for name, tc := range map[string]struct {
		held held
		live *corev1.ConfigMap
		left bool
	}{
		"held and outside the selector":      {held: held{key: "u1"}, live: cm("u1", "other"), left: true},
		"never held":                         {held: held{}, live: cm("u1", "other")},
		"gone":                               {held: held{key: "u1"}},
		"another object of the same name":    {held: held{key: "u1"}, live: cm("u2", "other")},
		"back in the selector, so the cache": {held: held{key: "u1"}, live: cm("u1", "demo")},
	} {
		t.Run(name, func(t *testing.T) {
			f := &Finder{NewObject: func() client.Object { return &corev1.ConfigMap{} }, Narrowed: labels.SelectorFromSet(labels.Set{"app": "demo"}),
				Live: oneObject{obj: tc.live}, Held: tc.held, Log: logr.Discard()}
			obj, err := f.Read(context.Background(), key)
			if err != nil || (obj != nil) != tc.left {
				t.Errorf("Read = %v, %v; want left %v", obj, err, tc.left)
			}
		})
	}
}

func TestOnlyTheFoundObjectsGopfStillHoldsAreWokenAgain(t *testing.T) {
	a := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "ua"}}
	b := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "ub"}}
	f := &Finder{Held: held{{Namespace: "ns", Name: "a"}: "ua"}, left: []client.Object{a, b}}
	if got := f.StillHeld(); len(got) != 1 || got[0] != a {
		t.Errorf("StillHeld = %v, want only a", got)
	}
}
