/*
Package robustness checks gopf's core promise, Kopf's contract, the way
etcd's robustness tests and Jepsen check theirs: random operations against
a real API server, recorded as a history, and a checker that judges the
history.

A seed gives a sequence of operations (Generate): objects created, their
spec, a label and a watched field changed, objects deleted; the operator
stopped and started again, or restarted while a handler runs; a fraction
of the operator's writes refused by the API server (409, 500, 504) or held
back, or forwarded and their responses lost (and the operator restarted
right after a loss); another writer racing gopf's writes; handlers armed to fail for a
while, to fail for good, or to patch their own object; and, in about
half the sequences, the operator process killed with SIGKILL. Run carries a
sequence out on one class of kind (Classes: a CRD whose status keeps
unknown fields, KopfExample; unstructured handlers on it; CRDs with a
typed, structural status as kubebuilder scaffolds them, Widget, and
cluster-scoped, ClusterWidget; a CRD without a status subresource, Gadget;
built-in kinds with a status, Pod and Namespace, and without, ConfigMap;
the CRDs of package test/kinds), with the
operator keeping its state in one storage (reconcile.Options.Storage), and
records what happened: the writes of the test's client, the calls of the
handlers and how they ended, the operator's writes that did not land (seen
by a fault proxy, package faults, between the operator and the API
server), and the objects at the end.

A sequence that kills runs each operator as a process of its own, the
way it runs in a Pod: the test binary started again with KilleeEnv set
(its TestMain hands over to RunKillee), with the same registry for the
class of kind, against the API server through the fault proxy. A SIGKILL
leaves no deferred write and no graceful shutdown. Kills come at these
moments (Moment): as an armed handler is called, before its side effect
(for a create handler: after gopf persisted its finalizer); after its side
effect, before it returns (a delete handler: during the deletion); a few
milliseconds after it returned, before, while or after the write of its
outcome; right after the response of one of its writes was lost (the
write landed, the operator could not tell); and at a random moment. Every handler call reports to the test
(over HTTP, to a server of the run) before it does anything, which is the
call's side effect, and again when it is done, before the engine writes
its outcome; a call that began and never reported its end was killed
while it ran. (A call that failed as the operator began to stop is
recorded as interrupted, as the engine takes it: not an attempt.) Whether the outcome of a call that ended landed before the
kill is read from the proxy's record: a write of gopf's stored state about
the object that landed (the API server answered it) after the call
ended and before the kill (EventLanded) carries it, since the engine
writes a reconcile's outcomes after its handlers ran, the state in the
last request (a handler's own object patch, or the results where the
state goes to annotations, come before it and carry no state). Every
class's objects also get a daemon, which reports when it starts, at each
iteration (every 200 ms, asleep in Daemon.Sleep in between) and when it
returns, with its stop reason; a kill armed on a daemon (MomentInDaemon)
comes as it reports an iteration, so the daemon is mid-iteration. And a
timer, every TimerInterval (400 ms, so that it runs many times in a
sequence), whose runs report when they begin and when they are about to
return, and return no result (they cost no write); a kill armed on a
timer (MomentInTimer) comes as a run reports its start, recorded, so the
run is cut while it waits for the answer. The timer has no idle time and
no initial delay. A graceful stop is recorded when it begins
(EventStopping) and when the process has exited (EventStop). The suite
runs no shards, so it has no kill during a shard handover. The
processes' logs are
discarded, or written to a folder GOPF_ROBUSTNESS_LOGS names, one file
per process.

Check is a pure function of that history and has tests of its own. It
holds gopf to: create handlers once per object lifetime, update handlers
once per change they are due (changes may coalesce; never for gopf's own
writes or for a handler's own patch), delete handlers once, resume
handlers once per process for every object handled before it started, no
finalizer of gopf's left on a deleted object, other finalizers kept, the
operator's writes within reconcile/doc.go's budget, and daemons: one run
of an object's daemon at a time (a killed process's daemon ends at the
kill), one running while a process runs and the object lives (started
within DaemonBound), none after the object's deletion began and none
still running when gopf releases it, and each that was not killed
stopped for the right reason; and timers: one run of an object's timer
at a time, in one process or two (a run killed with its process ends at
the kill), runs while a process runs and the object lives (the first
within TimerBound, each next within the interval and TimerSlack of the
end of the last), none begun in a process started after the object's
deletion, nor later than TimerSlack after its delete handler ran, none
under way when gopf releases the object or begun after, and none cut by
a graceful stop. A handler may run
again after a write of its outcome was refused: at least once, as in Kopf.
A write whose response was lost landed, and excuses no repeat. A call cut
by a kill (running when the process was killed, or ended with no write
of its outcome landed before the kill) may run again in the next process,
and Cuts counts those; a call whose outcome landed before the kill is
held to exactly once like any other.

Two ways to run it:

	go test ./test/robustness            # part of `make test`

runs one sequence per class of kind and storage, with fixed seeds (three
of the seven kill), the lost-response runs, TestKills: the first seed
that arms kills before a create handler, in a delete handler and after a
handler returned, and the scenarios of scenarios_test.go (two kill an
operator while a daemon is mid-iteration, or while a timer run is under
way, then stop the next one and delete the object), in about three minutes with -race on two cores. A
failure prints the seed, the violations, the sequence, the history, and
the command that runs that sequence again:

	GOPF_ROBUSTNESS_SEED=<seed> go test ./test/robustness -run 'TestSequences/<class>/<storage>$'

	make robustness                      # GOPF_ROBUSTNESS_DURATION=30m by default

runs TestRandomSequences: seeds from the clock, each picking its class
and storage, one sequence after another for GOPF_ROBUSTNESS_DURATION, and
prints at the end how many sequences and operations ran, the faults of
each kind, the kills at each moment, the calls cut by a kill and
repeated, the daemons' starts, iterations and stops by reason, and the
timer runs begun and ended. It stops at the first sequence that breaks
the contract.

Storages that cannot work on a kind are skipped, saying why (Class.Skip):
StorageStatus needs a status that keeps status.gopf.
*/
package robustness
