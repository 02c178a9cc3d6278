package envtest_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestNewSchemeKnowsTheBuiltInKindsAndTheGivenOnes(t *testing.T) {
	scheme := envtest.NewScheme(kopfv1.AddToScheme)
	for _, obj := range []runtime.Object{&corev1.Pod{}, &kopfv1.KopfExample{}} {
		if _, _, err := scheme.ObjectKinds(obj); err != nil {
			t.Errorf("the scheme does not know %T: %v", obj, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a failing AddToScheme did not make NewScheme panic")
		}
	}()
	envtest.NewScheme(func(*runtime.Scheme) error { return errors.New("broken") })
}
