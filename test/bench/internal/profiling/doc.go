// Package profiling lets the benchmark take a CPU profile of an operator
// process while the workload runs.
//
// An operator calls Start first thing in main. If the environment variable
// EnvCPUProfile names a file, Start begins a CPU profile; SIGUSR1 ends it and
// writes the file (to a temporary name first, renamed when complete, so the
// benchmark can wait for the name to appear). The benchmark sends SIGUSR1
// before SIGTERM: SIGTERM belongs to the operator's manager, which exits the
// process as soon as it has stopped, with no chance to flush a profile.
package profiling
