// Command baseline is the benchmark's yardstick: a hand-written
// controller-runtime operator doing the work of the gopf operator in
// package gopfop, the way an experienced controller-runtime author writes
// it. Its main is a kubebuilder main with the flags of gopf.Main that the
// benchmark sets (client configuration from ctrl.GetConfig, client-side
// limits from --kube-api-qps and --kube-api-burst, 16 concurrent
// reconciles, no metrics or probes when told so).
//
// The reconciler keeps a finalizer on every KopfExample, stores the create
// result ({"message": "created"} under status.create_fn) on first sight,
// detects spec changes the observedGeneration way (status.baseline.
// observedGeneration) and stores the update result together with the new
// generation in one status patch, and on deletion does its (empty) cleanup
// and removes the finalizer. With GOPF_BENCH_HANDLERS=n it stores n results
// per cause, still in one status patch. Reads come from the cache.
//
// With --unstructured it does the same work on unstructured objects
// (UnstructuredReconciler), as many write it for a CRD without Go types:
// the manager's client caches unstructured objects, the finalizer is added
// and removed with Update, and results and observed generation go in one
// status merge patch.
//
// With --tuned it does the same work on unstructured objects the way an
// expert writes it when the patch is known in advance (TunedReconciler):
// the unstructured cache on, the finalizer added and removed with Update,
// and the results and observed generation (on other kinds: the result
// annotations) sent as a literal merge-patch body, with no client.MergeFrom
// diff and no deep copy per write. It is the benchmark's verdict baseline.
//
// On a kind whose typed status cannot keep the results (GOPF_BENCH_KIND
// widget or pod; see package internal/scenario) AnnotatedReconciler does
// the same work with annotations: the results and the value of the watched
// field last handled go in one metadata merge patch per cause. Every
// result stored and every cleanup is recorded for the benchmark (package
// internal/calls).
//
// On a KopfExample labelled bench.gopf.dev/fail=true the create results
// are never stored: the reconciler records its create attempts and returns
// RequeueAfter GOPF_BENCH_RETRY_DELAY (5 s when unset), as the gopf
// operator's failing create handlers ask to be retried after that delay.
//
// With GOPF_BENCH_PERIODIC (timer or daemon: the same work for a
// reconciler) PeriodicReconciler does the gopf operator's periodic check
// instead, with RequeueAfter GOPF_BENCH_INTERVAL (10 s when unset).
package main
