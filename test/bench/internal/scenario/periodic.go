package scenario

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// EnvPeriodic names the environment variable that tells an operator to do
// periodic work instead of handling changes: PeriodicTimer or
// PeriodicDaemon. The gopf operator then runs a timer or a daemon, the
// hand-written one a reconciler that requeues itself, in both cases.
const EnvPeriodic = "GOPF_BENCH_PERIODIC"

// What EnvPeriodic can say.
const (
	// PeriodicTimer: a timer every Interval whose result never changes.
	PeriodicTimer = "timer"
	// PeriodicDaemon: a daemon that checks every Interval until stopped.
	PeriodicDaemon = "daemon"
)

// EnvInterval names the environment variable with the interval of the
// periodic work, a Go duration. Default: 10 s.
const EnvInterval = "GOPF_BENCH_INTERVAL"

// EnvRetryDelay names the environment variable with the delay of the
// create handler's temporary error on failing objects (see Failing), a Go
// duration. Default: 5 s.
const EnvRetryDelay = "GOPF_BENCH_RETRY_DELAY"

// Causes of the periodic work, as package calls records them.
const (
	// CauseTimer is a run of the gopf operator's timer.
	CauseTimer = "timer"
	// CauseDaemon is one check of the gopf operator's daemon.
	CauseDaemon = "daemon"
	// CauseRequeue is a reconcile of the hand-written operator that ends by
	// requeueing the object after the interval.
	CauseRequeue = "requeue"
)

// TimerKey is the id of the timer and the status key of its result; the
// hand-written operator stores its check under the same key.
const TimerKey = "timer_fn"

// DaemonID is the id of the daemon.
const DaemonID = "daemon_fn"

// FailLabel marks an object whose create handler fails, every time, with a
// temporary error asking for a retry after the retry delay.
const FailLabel = "bench.gopf.dev/fail"

// Periodic returns what EnvPeriodic says: "" (handle changes),
// PeriodicTimer or PeriodicDaemon; an error for anything else.
func Periodic() (string, error) {
	switch v := os.Getenv(EnvPeriodic); v {
	case "", PeriodicTimer, PeriodicDaemon:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want %s, %s or nothing", EnvPeriodic, v, PeriodicTimer, PeriodicDaemon)
	}
}

// Interval returns the interval EnvInterval names: 10 s when unset.
func Interval() (time.Duration, error) { return duration(EnvInterval, 10*time.Second) }

// RetryDelay returns the delay EnvRetryDelay names: 5 s when unset.
func RetryDelay() (time.Duration, error) { return duration(EnvRetryDelay, 5*time.Second) }

func duration(env string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(env)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration", env, v)
	}
	return d, nil
}

// Check is the periodic work on obj: its result depends on the watched
// field only, so it does not change while the objects are left alone.
func Check(obj client.Object) map[string]any {
	return map[string]any{"field": Field(obj)}
}

// Checked reports whether obj carries the result of the periodic check.
func Checked(obj *kopfv1.KopfExample) bool {
	_, ok := obj.Status.Extra[TimerKey]
	return ok
}

// Failing reports whether obj's create handler is to fail (FailLabel).
func Failing(obj client.Object) bool {
	return obj.GetLabels()[FailLabel] == "true"
}
