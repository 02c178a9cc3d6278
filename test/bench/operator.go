//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/profiling"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
)

// Operator names one of the operators under test.
type Operator struct {
	// Name is "baseline", "baseline-unstructured", "baseline-tuned" or
	// "gopf".
	Name string
	// Package is the Go package of its main.
	Package string
	// Args are flags of its own, after the flags every operator gets.
	Args []string
}

// The operators under test, in the order they run in the first round.
var (
	// Baseline is the hand-written reconciler on KopfExample's Go type.
	Baseline = Operator{Name: "baseline", Package: "github.com/gopf-dev/gopf/test/bench/baseline"}
	// BaselineUnstructured is the hand-written reconciler on unstructured
	// objects.
	BaselineUnstructured = Operator{Name: "baseline-unstructured", Package: Baseline.Package, Args: []string{"--unstructured"}}
	// BaselineTuned is the hand-written reconciler on unstructured objects
	// that sends literal merge-patch bodies instead of client.MergeFrom
	// diffs: what an expert writes, and the baseline of the verdict.
	BaselineTuned = Operator{Name: "baseline-tuned", Package: Baseline.Package, Args: []string{"--tuned"}}
	// Gopf is the gopf operator.
	Gopf = Operator{Name: "gopf", Package: "github.com/gopf-dev/gopf/test/bench/gopfop"}

	// Baselines are what gopf is compared with, the verdict's first (see
	// verdictBaseline); every target is checked against each.
	Baselines = []Operator{BaselineTuned, Baseline, BaselineUnstructured}
	// Operators are all of them. The tuned baseline and gopf are first and
	// last, so that rounds in rotation (roundOrder) run gopf before the
	// tuned baseline as often as after it, give or take one round.
	Operators = []Operator{BaselineTuned, Baseline, BaselineUnstructured, Gopf}
)

// The client-side limits both operators get: gopf.Main's defaults, given to
// the baseline too so that neither is held back more than the other.
const (
	operatorQPS   = 500
	operatorBurst = 1000
)

// stopGrace is how long an operator may take to stop after SIGTERM.
const stopGrace = 30 * time.Second

// build compiles op into dir and returns the binary's path.
func (op Operator) build(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, op.Name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, op.Package)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", op.Package, err, out)
	}
	return bin, nil
}

// process is a running operator.
type process struct {
	cmd     *exec.Cmd
	started time.Time
	logPath string
	// reconciles is the file with the operator's progress; "" for none.
	reconciles string
	prof       profiles
	exited     chan struct{}
	waitErr    error
	peakKiB    int64 // the highest VmHWM read
}

// EnvLogLevel, if set, is the log level the operators run with instead
// of error (zap's: info, debug, or a number), to read afterwards what an
// operator did in a run, the sharded runs' assigner above all (its passes
// log at info). Logs cost the operators CPU: not for runs whose figures
// count.
const EnvLogLevel = "GOPF_BENCH_LOG_LEVEL"

// logLevel is the operators' log level: EnvLogLevel's, or error.
func logLevel() string {
	if l := os.Getenv(EnvLogLevel); l != "" {
		return l
	}
	return "error"
}

// startProcess runs the operator binary with the flags every operator
// gets and its own args, as the user of kubeconfig, with env added to its
// environment and its output going to logPath. If reconcilesPath is set,
// the operator writes its progress there until it has seen objects objects
// (see package reconciles).
func startProcess(bin string, args []string, kubeconfig string, env []string, concurrency int,
	logPath, reconcilesPath string, objects int, prof profiles) (*process, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{
		"--health-probe-bind-address=0",
		"--metrics-bind-address=0",
		"--zap-log-level=" + logLevel(),
		"--max-concurrent-reconciles=" + strconv.Itoa(concurrency),
		"--kube-api-qps=" + strconv.Itoa(operatorQPS),
		"--kube-api-burst=" + strconv.Itoa(operatorBurst),
	}, args...)...)
	cmd.Env = append(append(os.Environ(), env...),
		"KUBECONFIG="+kubeconfig,
		profiling.EnvCPUProfile+"="+prof.cpu,
		profiling.EnvHeapProfile+"="+prof.heap,
		reconciles.EnvFile+"="+reconcilesPath,
		reconciles.EnvObjects+"="+strconv.Itoa(objects),
	)
	cmd.Stdout, cmd.Stderr = out, out
	// The operator must not outlive the benchmark.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &process{cmd: cmd, logPath: logPath, reconciles: reconcilesPath, prof: prof, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// sample returns the CPU time used so far and the peak RSS so far (KiB).
func (p *process) sample() (time.Duration, int64, error) {
	select {
	case <-p.exited:
		return 0, 0, p.exitError()
	default:
	}
	cpu, err := cpuTime(p.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	rss, err := peakRSS(p.cmd.Process.Pid)
	p.peakKiB = max(p.peakKiB, rss)
	return cpu, rss, err
}

// exitError describes an operator that stopped on its own.
func (p *process) exitError() error {
	tail, _ := os.ReadFile(p.logPath)
	if len(tail) > 4000 {
		tail = tail[len(tail)-4000:]
	}
	return fmt.Errorf("the operator %s exited (%v); its output ends with:\n%s", filepath.Base(p.cmd.Path), p.waitErr, tail)
}

// usage is what the operator process used over its whole life.
type usage struct {
	cpu     time.Duration
	peakKiB int64 // VmHWM, read until the process exited
	// rusageMaxRSS is the rusage maxrss in KiB. It is not the operator's
	// own peak: Go starts a child with vfork semantics (sharing the
	// parent's memory until exec), and Linux counts the parent's RSS
	// high-water mark into the child's maxrss at exec. It is reported for
	// reference only.
	rusageMaxRSS int64
}

// plus adds the usage of another process: CPU adds up, peaks are the
// higher one.
func (u usage) plus(o usage) usage {
	return usage{cpu: u.cpu + o.cpu, peakKiB: max(u.peakKiB, o.peakKiB), rusageMaxRSS: max(u.rusageMaxRSS, o.rusageMaxRSS)}
}

// stop writes the CPU profile (if any), then stops the operator with SIGTERM
// and waits for it, killing it after stopGrace.
func (p *process) stop() (usage, error) {
	select {
	case <-p.exited:
		return usage{}, p.exitError()
	default:
	}
	var errs []error
	if p.prof.cpu != "" {
		errs = append(errs, p.profile(syscall.SIGUSR1, p.prof.cpu))
	}
	// A process may exit before the first look after SIGTERM: its peak so
	// far, now. (Not rusage's maxrss, which counts the parent's.)
	if rss, err := peakRSS(p.cmd.Process.Pid); err == nil {
		p.peakKiB = max(p.peakKiB, rss)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		errs = append(errs, err)
	}
	// Follow the peak RSS while the operator shuts down.
	deadline := time.After(stopGrace)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
wait:
	for {
		select {
		case <-p.exited:
			break wait
		case <-poll.C:
			if rss, err := peakRSS(p.cmd.Process.Pid); err == nil {
				p.peakKiB = max(p.peakKiB, rss)
			}
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.exited
			errs = append(errs, fmt.Errorf("the operator did not stop within %s of SIGTERM and was killed", stopGrace))
			break wait
		}
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return usage{}, errors.Join(append(errs, errors.New("no resource usage for the operator process"))...)
	}
	u := usage{
		cpu:          time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		peakKiB:      p.peakKiB,
		rusageMaxRSS: ru.Maxrss, // KiB on Linux
	}
	return u, errors.Join(errs...)
}

// profiles are where an operator's profiles go; "" for none.
type profiles struct {
	cpu  string // written on SIGUSR1, before the operator stops
	heap string // written on SIGUSR2, while the objects are idle
}

// profile sends sig, which asks the operator for the profile at path, and
// waits for the file.
func (p *process) profile(sig syscall.Signal, path string) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the operator wrote no profile to %s", path)
}
