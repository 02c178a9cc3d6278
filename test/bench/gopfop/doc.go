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
package main
