// Command gopfop is the benchmark's gopf operator: on the kind
// GOPF_BENCH_KIND names (KopfExample when unset; see package
// internal/scenario) it registers create, update and delete handlers (one
// of each, or as many as GOPF_BENCH_HANDLERS says) and runs them with
// gopf.Main, so it takes the flags every gopf operator takes.
//
// On KopfExample each create handler stores {"message": "created"} under
// its id in status, each update handler {"message": "updated", "field":
// <spec.field>}. On a kind with a typed status (Widget, Pod), which cannot
// keep those, each handler patches its result into the annotation
// bench.gopf.dev/<handler id> instead. The delete handlers have nothing to
// clean up, as in Kopf's example. Every call is recorded for the benchmark
// (package internal/calls). The benchmark runs the same work written by
// hand in package baseline.
//
// On an object labelled bench.gopf.dev/fail=true, the create handlers fail
// every time with a temporary error asking to be called again after
// GOPF_BENCH_RETRY_DELAY (5 s when unset).
//
// With GOPF_BENCH_PERIODIC it does periodic work on KopfExample instead:
// "timer" registers a timer every GOPF_BENCH_INTERVAL (10 s when unset)
// whose result, stored under status.timer_fn, does not change; "daemon" a
// daemon that does the same check every interval until it is stopped,
// sleeping in between, and writes nothing. Each run and check is recorded
// with its start and end.
package main
