package envtest_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// lateTypes stands for a package of types that register in init, after
// the package variables (such as a test's scheme) were initialized.
var lateTypes = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	metav1.AddToGroupVersion(s, kopfv1.GroupVersion)
	return nil
})

var schemeBeforeInit = envtest.NewScheme(lateTypes.AddToScheme)

func TestASchemeMadeBeforeItsTypesRegisteredKnowsThemOnceATestUsesIt(t *testing.T) {
	lateTypes.Register(func(s *runtime.Scheme) error { // what init does
		s.AddKnownTypes(kopfv1.GroupVersion, &kopfv1.KopfExample{}, &kopfv1.KopfExampleList{})
		return nil
	})
	env := envtest.New(t, schemeBeforeInit)
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "late"}}
	if err := env.Client.Create(env.Ctx, obj); err != nil {
		t.Fatalf("creating a KopfExample with the scheme: %v", err)
	}
}
