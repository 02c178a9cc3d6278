//go:build !unix

package profiling

// Environment variables naming the profiles to write. Profiles are taken on
// Unix systems only.
const (
	EnvCPUProfile  = "GOPF_BENCH_CPUPROFILE"
	EnvHeapProfile = "GOPF_BENCH_HEAPPROFILE"
)

// Start does nothing: without SIGUSR1 and SIGUSR2 there is no way to ask for
// the profiles.
func Start() {}
