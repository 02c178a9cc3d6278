// Package calls lets the benchmark count an operator's handler calls from
// outside the process, per phase, as it counts the operator's requests
// from the API server's audit log, and time them per object.
//
// An operator calls Record each time a handler runs (gopf) or each time it
// does the work of one (the hand-written reconcilers: one per result it
// stores, one per cleanup), and Run around the runs of periodic work
// (a timer, a daemon's check, a reconcile that requeues itself), whose
// end matters as much as its start. If the environment variable EnvFile
// names a file, each call appends a line with its times, cause and object
// to it; the benchmark reads the file with Read, while the run goes on to
// wait for calls and when it is over to assign every call to the phase it
// fell in. Both processes of a run with a restart append to the same file,
// as do the replicas of a sharded run, each naming itself (EnvReplica).
package calls
