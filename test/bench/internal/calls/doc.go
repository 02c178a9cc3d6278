// Package calls lets the benchmark count an operator's handler calls from
// outside the process, per phase, as it counts the operator's requests
// from the API server's audit log.
//
// An operator calls Record each time a handler runs (gopf) or each time it
// does the work of one (the hand-written reconcilers: one per result it
// stores, one per cleanup). If the environment variable EnvFile names a
// file, Record appends a line with the time and the cause to it; the
// benchmark reads the file with Read when the run is over and assigns every
// call to the phase it fell in. Both processes of a run with a restart
// append to the same file.
package calls
