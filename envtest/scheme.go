package envtest

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// NewScheme returns a scheme with client-go's built-in kinds and the kinds
// of addToScheme (such as an API package's AddToScheme), for Run, New and
// OperatorOptions.Scheme. It panics if one of them fails, as a test can do
// nothing else then.
//
// A test package often declares its scheme as a package variable,
//
//	var scheme = envtest.NewScheme(AddToScheme)
//
// which Go initializes before the package's init functions run: when the
// types live in the same package and register themselves in init (as
// kubebuilder's generated types do, in package main too), addToScheme has
// nothing to add yet. So New, Run, Env.Start and RunOperator run
// addToScheme again, once, when they are first given the scheme, by which
// time every init has run. A scheme used elsewhere before then (a client of
// one's own built at package initialization) lacks those kinds.
func NewScheme(addToScheme ...func(*runtime.Scheme) error) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := addAll(scheme, addToScheme); err != nil {
		panic(fmt.Sprintf("envtest: %v", err))
	}
	pending.Store(scheme, &schemeAdditions{add: addToScheme})
	return scheme
}

// pending holds the additions of each scheme NewScheme made, until
// completeScheme has run them again.
var pending sync.Map // *runtime.Scheme → *schemeAdditions

// schemeAdditions are the functions a scheme was made with.
type schemeAdditions struct {
	add  []func(*runtime.Scheme) error
	once sync.Once
	err  error
}

// completeScheme runs the functions that NewScheme made scheme with again,
// the first time it is called for scheme; for other schemes it does
// nothing. Adding a kind again is harmless.
func completeScheme(scheme *runtime.Scheme) error {
	v, ok := pending.Load(scheme)
	if !ok {
		return nil
	}
	a := v.(*schemeAdditions)
	a.once.Do(func() { a.err = addAll(scheme, a.add) })
	return a.err
}

// addAll adds client-go's built-in kinds and those of addToScheme to
// scheme.
func addAll(scheme *runtime.Scheme, addToScheme []func(*runtime.Scheme) error) error {
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return fmt.Errorf("building a scheme: %w", err)
		}
	}
	return nil
}
