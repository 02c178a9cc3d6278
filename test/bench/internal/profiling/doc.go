// Package profiling lets the benchmark profile an operator process while the
// workload runs.
//
// An operator calls Start first thing in main. If the environment variable
// EnvCPUProfile names a file, Start begins a CPU profile; SIGUSR1 ends it and
// writes the file. If EnvHeapProfile names a file, SIGUSR2 writes a heap
// profile there (after a garbage collection, so in-use figures are live
// memory; the allocation figures count everything since the start). Files
// are written under a temporary name and renamed when complete, so the
// benchmark can wait for the name to appear.
//
// The benchmark sends SIGUSR2 while the objects are idle and SIGUSR1 before
// SIGTERM: SIGTERM belongs to the operator's manager, which exits the process
// as soon as it has stopped, with no chance to flush a profile.
package profiling
