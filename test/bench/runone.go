//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/reconciles"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// startupTimeout bounds the wait for an operator to start watching.
const startupTimeout = 5 * time.Minute

// startupSettle is how long the benchmark waits after the operator started
// watching the scenario's kind before it creates objects, so that the operator has
// also started its workers and the create phase measures handling only.
const startupSettle = time.Second

// mark is a phase boundary: when it was and what the operator had used.
type mark struct {
	phase string // the phase starting here
	at    time.Time
	cpu   time.Duration
	rss   int64
	// controlPlane is the CPU time kube-apiserver and etcd had used.
	controlPlane time.Duration
}

// restartTimeout bounds the wait for a restarted operator to see every
// object.
const restartTimeout = 10 * time.Minute

// run is one operator on one scenario, while it runs.
type run struct {
	b       *bench
	label   string // "<scenario>/<operator> (round <n>)", for progress
	id      string // "<scenario>-<operator>-r<round>", for file names
	op      Operator
	sc      Scenario
	kind    scenario.Kind
	ns      string // the namespace of the run's objects
	user    string
	kube    string   // the operator's kubeconfig
	calls   string   // the file the operator records its handler calls in
	proc    *process // the running process (the second one after a restart)
	started time.Time
	// startedCP is the control plane's CPU time when the first process
	// started.
	startedCP time.Duration
	track     *tracker
	marks     []mark                   // the phase boundaries after startup
	handled   map[string]time.Duration // per phase: first request to last object done
	// stopped is what the processes stopped by a restart used.
	stopped usage
	// periodic is what the running process is told to do (EnvPeriodic).
	periodic string
	// arrivals are, per phase, the objects created in it whose first
	// handler call is timed (WorkloadFairness).
	arrivals map[string][]string
	// created is when the API server answered each timed create request.
	created   map[string]time.Time
	createdMu sync.Mutex
	// objects is, per phase, the number of objects it is about, where that
	// is not all of them.
	objects map[string]int
	// countFiles are where the run's processes count their reconciles
	// (Options.CountReconciles), one per process.
	countFiles []string
	// profileDir receives kube-apiserver's CPU profile of each phase the
	// workload drives; "" for none.
	profileDir string
}

// runOne runs op through the phases of sc in a fresh namespace, as a fresh
// API user, and collects its figures.
func (b *bench) runOne(ctx context.Context, sc Scenario, op Operator, round int) (*RunResult, error) {
	kind, err := sc.kind()
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s-%s-r%d", sc.Name, op.Name, round)
	ns, user := "bench-"+id, "bench-"+id
	kubeconfig := filepath.Join(b.work, id+".kubeconfig")
	if err := b.cp.addOperatorUser(user, kubeconfig); err != nil {
		return nil, err
	}
	if err := b.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	names := sc.objectNames()
	track, err := startTracker(ctx, b.load, b.scheme, kind, ns, names)
	if err != nil {
		return nil, err
	}
	prof, err := b.profiles(id)
	if err != nil {
		return nil, err
	}

	r := &run{b: b, label: fmt.Sprintf("%s/%s (round %d)", sc.Name, op.Name, round), id: id, op: op, sc: sc, kind: kind,
		ns: ns, user: user, kube: kubeconfig, calls: filepath.Join(b.work, id+".calls"), track: track, handled: map[string]time.Duration{},
		arrivals: map[string][]string{}, created: map[string]time.Time{}, objects: map[string]int{}}
	if err := os.Remove(r.calls); err != nil && !os.IsNotExist(err) {
		return nil, err // calls of an earlier run in the same folder would be counted
	}
	if prof.cpu != "" {
		r.profileDir = filepath.Dir(prof.cpu)
	}
	load := &loadGenerator{c: b.c, kind: kind, ns: ns, names: names, workers: b.opts.Workers}
	if sc.Workload == WorkloadPeriodic {
		r.periodic = scenario.PeriodicTimer
		if err := r.createBeforeStart(ctx, load); err != nil {
			return nil, err
		}
	}
	b.log("%s/%s, round %d: starting the operator as user %s", sc.Name, op.Name, round, user)
	if r.startedCP, err = b.cp.cpu(); err != nil {
		return nil, err
	}
	if r.proc, err = r.start(id, prof, false); err != nil {
		return nil, err
	}
	r.started = r.proc.started
	stopped := false
	defer func() {
		if !stopped {
			_, _ = r.proc.stop()
		}
	}()

	if err := r.waitUntilWatching(ctx); err != nil {
		return nil, err
	}
	if r.admits() {
		if err := r.waitForWebhook(ctx); err != nil {
			return nil, err
		}
	}
	switch sc.Workload {
	case WorkloadPeriodic:
		err = r.runPeriodic(ctx, load)
	case WorkloadFairness:
		err = r.runFairness(ctx, load)
	default:
		err = r.runChanges(ctx, load)
	}
	if err != nil {
		return nil, err
	}
	stopped = true
	used, err := r.proc.stop()
	if r.admits() {
		err = errors.Join(err, r.removeLeftWebhook(ctx))
	}
	if err != nil {
		return nil, err
	}
	used = used.plus(r.stopped)
	b.report.clear()
	if err := b.audit.settle(ctx, time.Second); err != nil {
		return nil, err
	}
	rr, err := r.result(op, ns, used)
	if err != nil {
		return nil, err
	}
	rr.Round, rr.CPUProfile, rr.HeapProfile = round, prof.cpu, prof.heap
	return rr, nil
}

// gone is the goal of a delete phase.
func gone(o client.Object) bool { return o == nil }

// runChanges runs the phases of the workload of changes: create, idle,
// restart (if the scenario has it), update and delete.
func (r *run) runChanges(ctx context.Context, load *loadGenerator) error {
	n, names := r.sc.Handlers, r.track.names
	created := func(o client.Object) bool { return o != nil && scenario.Handled(o, n, false) }
	updated := func(o client.Object) bool { return o != nil && scenario.Handled(o, n, true) }
	if err := r.phase(ctx, PhaseCreate, load.createAll, r.track.expect(names, created), PhaseIdle); err != nil {
		return err
	}
	if err := r.idle(ctx); err != nil {
		return err
	}
	if r.sc.Restart {
		if err := r.restart(ctx); err != nil {
			return err
		}
	}
	if err := r.phase(ctx, PhaseUpdate, load.updateAll, r.track.expect(names, updated), ""); err != nil {
		return err
	}
	return r.phase(ctx, PhaseDelete, load.deleteAll, r.track.expect(names, gone), PhaseShutdown)
}

// start starts the run's operator; name names its output files. A
// restarted operator reports its progress until it has seen every object
// (see package reconciles): the restart phase waits for that.
func (r *run) start(name string, prof profiles, restarted bool) (*process, error) {
	var progress string
	if restarted {
		progress = filepath.Join(r.b.work, name+".reconciles")
	}
	env := []string{
		scenario.EnvKind + "=" + r.kind.Name,
		scenario.EnvPeriodic + "=" + r.periodic,
		calls.EnvFile + "=" + r.calls,
	}
	if r.sc.Handlers > 0 {
		env = append(env, scenario.EnvHandlers+"="+strconv.Itoa(r.sc.Handlers))
	}
	if r.b.opts.CountReconciles {
		counts := filepath.Join(r.b.work, name+".counts")
		if err := os.Remove(counts); err != nil && !os.IsNotExist(err) {
			return nil, err // the operator appends to it
		}
		r.countFiles = append(r.countFiles, counts)
		env = append(env, reconciles.EnvCounts+"="+counts)
	}
	if r.sc.Interval > 0 {
		env = append(env, scenario.EnvInterval+"="+r.sc.Interval.String())
	}
	if r.sc.RetryDelay > 0 {
		env = append(env, scenario.EnvRetryDelay+"="+r.sc.RetryDelay.String())
	}
	args := r.op.Args
	if r.admits() {
		args = append(slices.Clip(args), r.b.webhookArgs(r.id)...)
	}
	return startProcess(r.b.bins[r.op.Package], args, r.kube, env, r.b.opts.MaxConcurrentReconciles,
		filepath.Join(r.b.work, name+".log"), progress, len(r.track.names), prof)
}

// restart stops the operator and starts a new process, which finds every
// object handled already, and waits until it has seen them all: it has
// finished a reconcile per object and has nothing queued or running. The
// phase's time runs from the new process's start until then; its CPU,
// RSS and requests from SIGTERM to the old process until the next phase.
func (r *run) restart(ctx context.Context) error {
	if err := r.respawn(PhaseRestart, "restarted", true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	total := len(r.track.names)
	for {
		s, err := reconciles.Read(r.proc.reconciles)
		if err == nil && s.Idle(total) {
			break
		}
		r.b.report.status("%s restart %d/%d", r.label, s.Reconciles, total)
		select {
		case <-r.proc.exited:
			return r.proc.exitError()
		case <-ctx.Done():
			return fmt.Errorf("restart phase: waiting for the operator to see %d objects (last read: %+v, %v): %w", total, s, err, ctx.Err())
		case <-time.After(reconciles.Interval):
		}
	}
	seen := time.Now()
	r.handled[PhaseRestart] = seen.Sub(r.proc.started)
	r.b.log("%s: restart: %d objects seen in %.2f s", r.label, total, r.handled[PhaseRestart].Seconds())
	return nil // the update phase starts now
}

// respawn marks the start of phase, stops the operator and starts a new
// process, its files named after the run's with suffix; with progress, it
// reports its progress (see start).
func (r *run) respawn(phase, suffix string, progress bool) error {
	if err := r.mark(phase); err != nil {
		return err
	}
	r.b.report.status("%s %s: stopping", r.label, phase)
	used, err := r.proc.stop()
	if err != nil {
		return err
	}
	r.stopped = r.stopped.plus(used)
	var prof profiles
	if r.proc.prof.cpu != "" {
		prof.cpu = filepath.Join(filepath.Dir(r.proc.prof.cpu), r.id+"-"+suffix+".cpu.pprof")
	}
	if r.proc.prof.heap != "" {
		prof.heap = filepath.Join(filepath.Dir(r.proc.prof.heap), r.id+"-"+suffix+".heap.pprof")
	}
	r.proc, err = r.start(r.id+"-"+suffix, prof, progress)
	return err
}

// waitUntilWatching waits until the operator watches the scenario's kind
// (its caches are filling, and objects created from now on reach it as events),
// and then for startupSettle. In WorkloadPeriodic, whose objects exist
// before the operator starts, it does not wait for startupSettle: the
// operator has listed them all and is handling them.
func (r *run) waitUntilWatching(ctx context.Context) error {
	r.b.report.status("%s starting", r.label)
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	exited := r.proc.exited // r.proc changes when the run restarts the operator
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := r.b.audit.waitFor(ctx, r.user, func(q request) bool {
		return q.verb == "watch" && q.resource == r.kind.Resource
	})
	select {
	case <-r.proc.exited:
		return r.proc.exitError()
	default:
	}
	if err != nil {
		return fmt.Errorf("waiting for the operator to watch %s: %w", r.kind.Resource, err)
	}
	if r.sc.Workload == WorkloadPeriodic {
		return nil
	}
	select {
	case <-time.After(startupSettle):
	case <-r.proc.exited:
		return r.proc.exitError()
	}
	return nil
}

// mark records the start of a phase. CPU counts from the start of the
// run's first process; RSS is the peak of the running one.
func (r *run) mark(phase string) error {
	cpu, rss, err := r.proc.sample()
	if err != nil {
		return err
	}
	cp, err := r.b.cp.cpu()
	if err != nil {
		return err
	}
	r.marks = append(r.marks, mark{phase: phase, at: time.Now(), cpu: r.stopped.cpu + cpu, rss: rss, controlPlane: cp})
	return nil
}

// waiter tells when the operator has done a phase's work.
type waiter interface {
	// wait returns when the work is done, and when that was.
	wait(ctx context.Context) (time.Time, error)
	// progress returns how many objects are done, of how many.
	progress() (done, of int)
}

// phase marks the start of a phase, sends its requests and waits until w
// says the operator is done, showing progress. If next is set, the next
// phase starts when the operator was seen done. When profiling, the API
// server is profiled from the mark until the phase returns.
func (r *run) phase(ctx context.Context, name string, send func(context.Context) error, w waiter, next string) (err error) {
	if err := r.mark(name); err != nil {
		return err
	}
	if r.profileDir != "" {
		p, err := r.b.cp.profileAPIServer(filepath.Join(r.profileDir, r.id+".apiserver-"+name+".pprof"))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, p.stop()) }()
	}
	start := r.marks[len(r.marks)-1].at
	doneAt, err := r.await(ctx, name, send, w)
	if err != nil {
		return err
	}
	r.handled[name] = doneAt.Sub(start)
	_, of := w.progress()
	r.b.log("%s: %s: %d objects in %.2f s", r.label, name, of, r.handled[name].Seconds())
	if next == "" {
		return nil
	}
	// CPU and memory are sampled now, a moment after the last object was
	// seen done; the next phase's requests are counted from doneAt.
	if err := r.mark(next); err != nil {
		return err
	}
	r.marks[len(r.marks)-1].at = doneAt
	return nil
}

// await sends a phase's requests, if send is set, and waits until w says
// the operator is done, within the phase timeout, showing progress. It
// returns when the operator was done.
func (r *run) await(ctx context.Context, name string, send func(context.Context) error, w waiter) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.b.opts.PhaseTimeout)
	defer cancel()
	var sent chan error
	if send != nil {
		sent = make(chan error, 1)
		go func() { sent <- send(ctx) }()
	}
	done := make(chan struct{})
	var doneAt time.Time
	var waitErr error
	go func() {
		doneAt, waitErr = w.wait(ctx)
		close(done)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		n, of := w.progress()
		r.b.report.status("%s %s %d/%d", r.label, name, n, of)
		select {
		case err := <-sent:
			if err != nil {
				return time.Time{}, fmt.Errorf("%s phase: %w", name, err)
			}
			sent = nil // all sent; keep waiting
		case <-done:
			waiting = false
		case <-r.proc.exited:
			return time.Time{}, r.proc.exitError()
		case <-tick.C:
		}
	}
	if waitErr != nil {
		return time.Time{}, fmt.Errorf("%s phase: waiting for the operator: %w", name, waitErr)
	}
	if sent != nil {
		if err := <-sent; err != nil {
			return time.Time{}, fmt.Errorf("%s phase: %w", name, err)
		}
	}
	return doneAt, nil
}

// idle leaves the objects alone for the configured time. When profiling,
// the operator writes its heap profile now, with every object in its cache.
func (r *run) idle(ctx context.Context) error {
	start := time.Now()
	if r.proc.prof.heap != "" {
		if err := r.proc.profile(syscall.SIGUSR2, r.proc.prof.heap); err != nil {
			return err
		}
	}
	return r.pause(ctx, PhaseIdle, r.b.opts.Idle-time.Since(start))
}

// pause leaves the objects alone for d, in the phase named, unless the
// operator exits.
func (r *run) pause(ctx context.Context, name string, d time.Duration) error {
	r.b.report.status("%s %s %s", r.label, name, d)
	select {
	case <-time.After(d):
	case <-r.proc.exited:
		return r.proc.exitError()
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// profiles returns where the profiles of run id go, or none when no
// profiles are taken.
func (b *bench) profiles(id string) (profiles, error) {
	if b.opts.ProfileDir == "" {
		return profiles{}, nil
	}
	dir, err := filepath.Abs(b.opts.ProfileDir)
	if err != nil {
		return profiles{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return profiles{}, err
	}
	p := profiles{cpu: filepath.Join(dir, id+".cpu.pprof"), heap: filepath.Join(dir, id+".heap.pprof")}
	for _, path := range []string{p.cpu, p.heap} {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return profiles{}, err
		}
	}
	return p, nil
}
