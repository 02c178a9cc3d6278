package spec

import (
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
)

// PanicError is a panic of a handler, recovered by Protect.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Protect runs fn, turning a panic in it into a *PanicError (logged with
// its stack): the one place gopf recovers the panics of handlers, for every
// handler kind.
func Protect(log logr.Logger, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("panic: %v", p), "handler panicked", "stack", string(debug.Stack()))
			err = &PanicError{Value: p}
		}
	}()
	return fn()
}
