// Command gopfop is the benchmark's gopf operator: on KopfExample objects it
// registers create, update and delete handlers (one of each, or as many as
// GOPF_BENCH_HANDLERS says) and runs them with gopf.Main, so it takes the
// flags every gopf operator takes.
//
// Each create handler stores {"message": "created"} under its id in status,
// each update handler {"message": "updated", "field": <spec.field>}; the
// delete handlers have nothing to clean up, as in Kopf's example. The
// benchmark runs the same work written by hand in package baseline.
package main
