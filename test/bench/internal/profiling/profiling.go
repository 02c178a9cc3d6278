//go:build unix

package profiling

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// Environment variables naming the profiles to write. Unset: no profile.
const (
	EnvCPUProfile  = "GOPF_BENCH_CPUPROFILE"
	EnvHeapProfile = "GOPF_BENCH_HEAPPROFILE"
)

// Start begins a CPU profile when EnvCPUProfile is set and arranges for
// SIGUSR1 to write it, and for SIGUSR2 to write a heap profile when
// EnvHeapProfile is set. Problems are reported on stderr and never stop the
// operator.
func Start() {
	if path := os.Getenv(EnvCPUProfile); path != "" {
		if err := startCPU(path); err != nil {
			fmt.Fprintln(os.Stderr, "profiling:", err)
		}
	}
	if path := os.Getenv(EnvHeapProfile); path != "" {
		onSignal(syscall.SIGUSR2, func() error {
			runtime.GC()
			return writeFile(path, func(f *os.File) error { return pprof.Lookup("heap").WriteTo(f, 0) })
		})
	}
}

func startCPU(path string) error {
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	onSignal(syscall.SIGUSR1, func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	})
	return nil
}

// onSignal runs fn once, when sig first arrives.
func onSignal(sig os.Signal, fn func() error) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	go func() {
		<-ch
		signal.Stop(ch)
		if err := fn(); err != nil {
			fmt.Fprintln(os.Stderr, "profiling:", err)
		}
	}()
}

// writeFile writes path through a temporary file renamed when complete.
func writeFile(path string, write func(*os.File) error) error {
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
