package handlers

import (
	"fmt"
	"time"
)

// TemporaryError asks for the handler to be called again after Delay. Return
// one (or wrap one) when the failure is expected to pass: a dependency not
// ready yet, a conflict, a rate limit.
type TemporaryError struct {
	// Err is the cause, shown in logs and stored progress.
	Err error
	// Delay is how long to wait before the next attempt. Zero means the
	// handler's default backoff.
	Delay time.Duration
}

// Temporary wraps err in a TemporaryError with a delay; nil stays nil.
func Temporary(err error, delay time.Duration) error {
	if err == nil {
		return nil
	}
	return &TemporaryError{Err: err, Delay: delay}
}

func (e *TemporaryError) Error() string {
	return fmt.Sprintf("temporary error (retry in %s): %v", e.Delay, e.Err)
}

// Unwrap returns the cause.
func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError ends the handler for the current cause with a recorded
// failure: it is not called again for that cause, and the other handlers go
// on.
type PermanentError struct {
	// Err is the cause, shown in logs and stored progress.
	Err error
}

// Permanent wraps err in a PermanentError; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

func (e *PermanentError) Error() string { return fmt.Sprintf("permanent error: %v", e.Err) }

// Unwrap returns the cause.
func (e *PermanentError) Unwrap() error { return e.Err }
