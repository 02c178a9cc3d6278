// Package reconciles lets the benchmark follow an operator's work from
// outside the process: how many reconciles of the benchmark's kind it has finished,
// how many wait in its work queue and how many run.
//
// An operator calls Start first thing in main. If the environment variable
// EnvFile names a file, Start writes a Snapshot there every Interval, read
// from controller-runtime's metrics registry (which both operators fill,
// whether or not they serve metrics). The benchmark reads it with Read to
// tell when a restarted operator has seen every object: it has finished at
// least one reconcile per object and its queue is empty. Only a restarted
// operator is given EnvFile, and it stops writing once it has seen the
// EnvObjects objects, so that reading the registry does not add to the CPU
// of the phases measured after.
//
// If EnvCounts names a file, the operator also appends its finished
// reconciles by result (Counts) there for its whole life, every
// CountsInterval in which they changed: the benchmark splits them by phase
// to tell reconciles per object and requeues (benchmark flag
// -count-reconciles; off by default, as the reading costs CPU).
package reconciles
