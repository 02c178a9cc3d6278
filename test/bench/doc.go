/*
Package bench measures gopf against hand-written controller-runtime
reconcilers doing the same work, in one run, on one control plane.

Run drives the whole benchmark: it starts kube-apiserver and etcd from the
envtest binaries with the API server's audit log on, builds the operators
(package baseline, the yardstick, run three times: with --tuned, on
unstructured objects with literal merge-patch bodies, the verdict's
baseline; on KopfExample's Go type; and, with --unstructured, on
unstructured objects with client.MergeFrom diffs; and package gopfop, the
same behaviour as gopf handlers) and runs each as a separate process, one after
the other, each in a namespace of its own and as an API user of its own.
Against each it drives the same workload with the administrator's
credentials:

  - create: create N objects, wait until each carries its create results;
  - idle: leave them alone for a while;
  - restart (scenarios with Restart: Scale, TypedStatus, BuiltIn): stop the
    operator, start it again and wait until it has seen every object (a
    reconcile each, nothing queued or running; see package
    internal/reconciles);
  - update: change the watched field of every object, wait for each update
    result;
  - delete: delete every object, wait until all are gone.

In scenario Webhook, gopf adds its finalizer at admission, with its
finalizer webhook (Scenario.AdmissionFinalizers), so that a create costs
it one write instead of two; the baselines add theirs with a write.

Two scenarios run other workloads (Scenario.Workload), against the typed
baseline only. Periodic (WorkloadPeriodic) creates 10,000 objects, starts
the operator on them and leaves them to a gopf timer whose result does
not change, then, in a new process, to a gopf daemon that checks and
sleeps, against a reconciler that requeues itself with RequeueAfter; it
measures CPU per run, peak RSS, writes and how late each run starts (see
lateness). Fairness
(WorkloadFairness) times new objects from creation to their first create
handler call, first alone, then while as many others fail with a temporary
error and retry (see runFairness).

Scenario sharded (Options.Sharded, `make bench-sharded`) runs gopf's
operator alone, as replicas of one shard ring, each a process with its own
shard name and API user: the changes workload with 1, 2 and 4 replicas,
then with a replica joining during the create phase and one leaving
during the update phase, then with a replica killed every 30 s. It
compares each replica's CPU and peak RSS with the single replica's, counts
the sharding labels' writes apart from the handlers' (see shardWatch),
and finds handler calls made for the same object and cause by two
replicas (see duplicates).

The objects are KopfExamples, whose status keeps unknown fields, so the
results go to status; TypedStatus runs on Widget (package test/kinds: a
typed status the API server prunes) and BuiltIn on Pods, where the results
go to annotations (see package internal/scenario).

The operator's requests are counted from the audit log, split by user, verb
and resource, and assigned to the phase during which the API server received
them; the load generator's requests are not audited. Its handler calls are
recorded by the operator itself (package internal/calls) and assigned to
phases the same way. The operator's CPU time
is read from /proc/<pid>/stat at every phase boundary and from the process's
rusage when it exits, kube-apiserver's and etcd's the same way, and their
sum per object is what the cluster pays for a phase; its peak resident set
size from /proc/<pid>/status. With Options.CountReconciles the operators
count their reconciles by result (package internal/reconciles).

The results are compared against targets (gopf/baseline ratios against the
tuned baseline, or the typed one where the tuned does not run, for the
verdict, and against the others for comparison; see Targets and
ScenarioResult.compare) and written out as a terminal table, JSON and
Markdown. `make bench` runs the full benchmark through command
test/bench/cmd/bench; TestBenchmarkSmoke runs a small one as part of
`make test`.

The benchmark reads /proc and runs on Linux only.
*/
package bench
