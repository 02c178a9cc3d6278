package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Outcome is what one attempt of a handler comes to.
type Outcome int

const (
	// Succeeded: the handler is done (also an error ignored by ErrorsIgnored).
	Succeeded Outcome = iota
	// Retrying: the handler is called again after verdict.delay.
	Retrying
	// Failed: the handler failed for good (a PermanentError, a permanent
	// error mode, or no attempts or time left).
	Failed
)

func (o Outcome) String() string {
	return [...]string{Succeeded: "success", Retrying: "retry", Failed: "failure"}[o]
}

// Verdict is the outcome of one attempt with what goes with it.
type Verdict struct {
	Outcome Outcome
	// Delay is the wait before the next attempt, when retrying.
	Delay time.Duration
	// Err is the error to record: the handler's, wrapped when attempts or
	// time ran out; nil on a plain success.
	Err error
	// Ignored: an error the ErrorsIgnored mode turned into a success.
	Ignored bool
}

// ErrRetriesExhausted and ErrTimeout are the causes of the permanent
// failure Judge gives a handler that runs out of attempts (the Retries
// option) or time (the Timeout option). They reach users only as the text
// of the failure (in logs, Events and stored progress), so they are not part
// of package handlers.
var (
	ErrRetriesExhausted = errors.New("no attempts left")
	ErrTimeout          = errors.New("out of time")
)

// Judge is gopf's one error policy, for every handler kind that has one
// (change handlers, sub-handlers, timers, daemons, startup and cleanup
// handlers): what an attempt's error means for a handler with options o.
// attempts counts the attempts for this cause including this one; started
// is when the first of them began.
//
// A nil error succeeds. A PermanentError fails. A TemporaryError retries
// after its delay (or the backoff when it gives none). Any other error — a
// recovered panic included — follows the error mode: retried after the
// backoff (the default), failed, or ignored. A retry that would exceed
// Retries attempts, or end Timeout or later after the first attempt,
// fails instead with ErrRetriesExhausted or ErrTimeout.
func Judge(o spec.Options, defaultBackoff time.Duration, err error, attempts int, started, now time.Time) Verdict {
	if err == nil {
		return Verdict{Outcome: Succeeded}
	}
	var temp *handlers.TemporaryError
	var perm *handlers.PermanentError
	delay := time.Duration(0)
	switch {
	case errors.As(err, &perm):
		return Verdict{Outcome: Failed, Err: err}
	case errors.As(err, &temp):
		delay = temp.Delay
	case o.Errors == spec.ErrorsIgnored:
		return Verdict{Outcome: Succeeded, Err: err, Ignored: true}
	case o.Errors == spec.ErrorsPermanent:
		return Verdict{Outcome: Failed, Err: err}
	}
	if delay <= 0 {
		delay = o.Backoff
	}
	if delay <= 0 {
		delay = defaultBackoff
	}
	switch {
	case o.Retries > 0 && attempts >= o.Retries:
		return Verdict{Outcome: Failed, Err: handlers.Permanent(fmt.Errorf("%w after %d attempts: %v", ErrRetriesExhausted, attempts, err))}
	case o.Timeout > 0 && now.Add(delay).Sub(started) >= o.Timeout:
		return Verdict{Outcome: Failed, Err: handlers.Permanent(fmt.Errorf("%w: %s since the first attempt: %v", ErrTimeout, o.Timeout, err))}
	}
	return Verdict{Outcome: Retrying, Delay: delay, Err: err}
}
