package profiling

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// EnvCPUProfile names the environment variable holding the path of the CPU
// profile to write. Unset: no profile.
const EnvCPUProfile = "GOPF_BENCH_CPUPROFILE"

// Start begins a CPU profile when EnvCPUProfile is set and arranges for
// SIGUSR1 to write it. Problems are reported on stderr and never stop the
// operator.
func Start() {
	path := os.Getenv(EnvCPUProfile)
	if path == "" {
		return
	}
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profiling:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "profiling:", err)
		_ = f.Close()
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		<-sig
		signal.Stop(sig)
		pprof.StopCPUProfile()
		err := f.Close()
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "profiling:", err)
		}
	}()
}
