package policy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestJudgeDecidesTheOutcomeOfAnAttemptForEveryHandlerKind(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oops := errors.New("oops")
	const backoff = time.Minute
	for name, tc := range map[string]struct {
		opts     spec.Options
		err      error
		attempts int
		now      time.Time
		want     Outcome
		delay    time.Duration
		ignored  bool
		wantErr  error // errors.Is target of the recorded error, if any
	}{
		"nil error succeeds":                        {err: nil, attempts: 1, want: Succeeded},
		"a permanent error fails":                   {err: handlers.Permanent(oops), attempts: 1, want: Failed, wantErr: oops},
		"a wrapped permanent error fails":           {err: fmt.Errorf("ctx: %w", handlers.Permanent(oops)), attempts: 1, want: Failed},
		"a temporary error retries after its delay": {err: handlers.Temporary(oops, 5*time.Second), attempts: 1, want: Retrying, delay: 5 * time.Second},
		"a temporary error without delay uses the handler's backoff": {
			opts: spec.Options{Backoff: 7 * time.Second}, err: handlers.Temporary(oops, 0), attempts: 1, want: Retrying, delay: 7 * time.Second},
		"a plain error retries after the default backoff": {err: oops, attempts: 1, want: Retrying, delay: backoff},
		"a recovered panic is an error like others":       {err: &spec.PanicError{Value: "boom"}, attempts: 1, want: Retrying, delay: backoff},
		"ErrorsPermanent fails a plain error":             {opts: spec.Options{Errors: spec.ErrorsPermanent}, err: oops, attempts: 1, want: Failed},
		"ErrorsPermanent still retries a temporary error": {
			opts: spec.Options{Errors: spec.ErrorsPermanent}, err: handlers.Temporary(oops, time.Second), attempts: 1, want: Retrying, delay: time.Second},
		"ErrorsIgnored turns a plain error into success": {opts: spec.Options{Errors: spec.ErrorsIgnored}, err: oops, attempts: 1, want: Succeeded, ignored: true},
		"ErrorsIgnored does not ignore a permanent error": {
			opts: spec.Options{Errors: spec.ErrorsIgnored}, err: handlers.Permanent(oops), attempts: 1, want: Failed},
		"the last allowed attempt fails with ErrRetriesExhausted": {
			opts: spec.Options{Retries: 3}, err: oops, attempts: 3, want: Failed, wantErr: ErrRetriesExhausted},
		"an attempt before the last retries": {opts: spec.Options{Retries: 3}, err: oops, attempts: 2, want: Retrying, delay: backoff},
		"a retry that would end past Timeout fails with ErrTimeout": {
			opts: spec.Options{Timeout: 90 * time.Second}, err: oops, attempts: 1, now: start.Add(31 * time.Second), want: Failed, wantErr: ErrTimeout},
		"a retry that ends before Timeout retries": {
			opts: spec.Options{Timeout: 90 * time.Second}, err: oops, attempts: 1, now: start.Add(29 * time.Second), want: Retrying, delay: backoff},
	} {
		t.Run(name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = start
			}
			v := Judge(tc.opts, backoff, tc.err, tc.attempts, start, now)
			if v.Outcome != tc.want || v.Delay != tc.delay || v.Ignored != tc.ignored {
				t.Fatalf("judge = {%s, delay %s, ignored %v}, want {%s, delay %s, ignored %v}", v.Outcome, v.Delay, v.Ignored, tc.want, tc.delay, tc.ignored)
			}
			if (tc.err == nil) != (v.Err == nil) {
				t.Fatalf("recorded error %v for handler error %v", v.Err, tc.err)
			}
			if tc.wantErr != nil && !errors.Is(v.Err, tc.wantErr) {
				t.Fatalf("recorded error %v is not %v", v.Err, tc.wantErr)
			}
			var perm *handlers.PermanentError
			if tc.want == Failed && !errors.As(v.Err, &perm) && !errors.As(tc.err, &perm) && tc.opts.Errors != spec.ErrorsPermanent {
				t.Fatalf("a failure for running out of attempts or time is recorded as a PermanentError, got %v", v.Err)
			}
		})
	}
}

func TestRetryScheduleOfAPlainErrorEndsAfterRetriesAttempts(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := spec.Options{Retries: 4, Backoff: 10 * time.Second}
	now := start
	var schedule []time.Duration
	for attempt := 1; ; attempt++ {
		v := Judge(opts, time.Hour, errors.New("down"), attempt, start, now)
		if v.Outcome != Retrying {
			if v.Outcome != Failed || attempt != 4 {
				t.Fatalf("attempt %d: %s, want failure at attempt 4", attempt, v.Outcome)
			}
			break
		}
		schedule = append(schedule, v.Delay)
		now = now.Add(v.Delay)
	}
	if fmt.Sprint(schedule) != "[10s 10s 10s]" {
		t.Fatalf("retry delays %v, want three of the handler's backoff", schedule)
	}
}

func TestProtectTurnsAPanicIntoAnError(t *testing.T) {
	err := spec.Protect(logr.Discard(), func() error { panic("boom") })
	var p *spec.PanicError
	if !errors.As(err, &p) || p.Value != "boom" || err.Error() != "panic: boom" {
		t.Fatalf("Protect returned %v, want a PanicError for boom", err)
	}
	if err := spec.Protect(logr.Discard(), func() error { return nil }); err != nil {
		t.Fatalf("Protect returned %v for a function that did not panic", err)
	}
}
