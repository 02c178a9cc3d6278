// Package policy judges one attempt of a handler (Judge): done, retried
// after a delay, or failed for good, from the error it returned, its error
// mode, its retries and timeout, and the default backoff. Every caller of
// handlers (changes, timers, daemons, operator handlers) goes by the same
// verdict.
package policy
