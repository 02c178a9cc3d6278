//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// Sharded configures the sharded scenario: gopf's operator as several
// replicas of one ring (docs/sharding.md), each a process of its own with
// its own shard name and API user, on the basic workload.
type Sharded struct {
	// Objects is how many objects each run handles. Default: 10,000.
	Objects int `json:"objects"`
	// Replicas are the replica counts of the scaling runs, the first the
	// one the others are compared with. Default: 1, 2 and 4.
	Replicas []int `json:"replicas"`
	// ChurnReplicas is how many replicas the churn run starts with: one
	// more joins in the middle of the create phase, one leaves in the
	// middle of the update phase. Default: 2.
	ChurnReplicas int `json:"churnReplicas"`
	// RollReplicas is how many replicas the rolling run has: in the middle
	// of the update phase each is replaced, one at a time, as a
	// Deployment's rolling update replaces its Pods (a new replica with a
	// new shard name starts, then the oldest stops gracefully). Default: 4.
	RollReplicas int `json:"rollReplicas"`
	// ChaosReplicas is how many replicas the chaos run keeps: every
	// KillEvery one of them is killed with SIGKILL and a new one, with a
	// new shard name as a Deployment's new Pod would have, takes its
	// place. Default: 2.
	ChaosReplicas int `json:"chaosReplicas"`
	// KillEvery is the chaos run's period of kills. Default: 30 s.
	KillEvery time.Duration `json:"killEvery"`
	// LatencyReplicas are the replica counts of the latency runs, each
	// run twice: with gopf's webhook, which gives new objects their shard
	// at admission, and without, where the elected assigner gives it to
	// them as they appear. Default: 1 and 4.
	LatencyReplicas []int `json:"latencyReplicas"`
	// LatencyObjects is how many objects a latency run creates, one after
	// the other at LatencyRate a second, below the assigner's 100 writes
	// a second. Default: 500 at 50 a second.
	LatencyObjects int     `json:"latencyObjects"`
	LatencyRate    float64 `json:"latencyRate"`
	// Runs names the only runs that run: "r<n>" for a scaling run (n one
	// of Replicas), "latency", "churn", "rolling" and "chaos". Empty: all.
	// The first scaling run of Replicas is still the one the others are
	// compared with, so it must be among them when another one is.
	Runs []string `json:"runs,omitempty"`
}

// The name of the latency runs in Sharded.Runs.
const runLatency = "latency"

// check reports a name in Runs that names no run, and a scaling run
// without the first scaling run to compare it with.
func (s Sharded) check() error {
	known := make([]string, 0, len(s.Replicas)+4)
	for _, n := range s.Replicas {
		known = append(known, fmt.Sprintf("r%d", n))
	}
	known = append(known, runLatency, runChurn, runRoll, runChaos)
	scaling := false
	for _, name := range s.Runs {
		if !slices.Contains(known, name) {
			return fmt.Errorf("sharded run %q: want one of %s", name, strings.Join(known, ", "))
		}
		scaling = scaling || strings.HasPrefix(name, "r") && name != runRoll
	}
	if first := fmt.Sprintf("r%d", s.Replicas[0]); scaling && !s.runs(first) {
		return fmt.Errorf("sharded runs %s: the scaling runs need %s, the run they are compared with", strings.Join(s.Runs, ","), first)
	}
	return nil
}

// runs reports whether the run of that name runs.
func (s Sharded) runs(name string) bool { return len(s.Runs) == 0 || slices.Contains(s.Runs, name) }

func (s Sharded) withDefaults() Sharded {
	if s.Objects <= 0 {
		s.Objects = 10000
	}
	if len(s.Replicas) == 0 {
		s.Replicas = []int{1, 2, 4}
	}
	if s.ChurnReplicas <= 0 {
		s.ChurnReplicas = 2
	}
	if s.RollReplicas <= 0 {
		s.RollReplicas = 4
	}
	if s.ChaosReplicas <= 0 {
		s.ChaosReplicas = 2
	}
	if s.KillEvery <= 0 {
		s.KillEvery = 30 * time.Second
	}
	if len(s.LatencyReplicas) == 0 {
		s.LatencyReplicas = []int{1, 4}
	}
	if s.LatencyObjects <= 0 {
		s.LatencyObjects = 500
	}
	if s.LatencyRate <= 0 {
		s.LatencyRate = 50
	}
	return s
}

// disturbedWork is how long the handler calls of every tenth object take
// in the churn and rolling runs (honouring their context, as calls out of
// the cluster do), so that a replica that stops finds calls in flight to
// finish or hand over: longer than the assigner takes to move a stopped
// replica's objects. At 1,000 objects, the rolling run with 200 ms calls
// on every object found no repeats even on the code that released the
// Lease before its calls finished; with 3 s calls, 12 objects handled by
// two replicas there, and none once the Lease waits for the calls.
const disturbedWork = 3 * time.Second

// settleTimeout bounds the wait, after the churn and chaos runs' update
// phase, for every object to be assigned to a live shard: a dead shard's
// Lease expires within 15 s, the assigner's next pass follows within 5 s
// and it moves 100 objects a second.
const settleTimeout = 3 * time.Minute

// shardRun is one run of the sharded scenario, while it runs.
type shardRun struct {
	b        *bench
	s        Sharded
	id       string // "sharded-<run>": namespace, ring, users, files
	kind     scenario.Kind
	names    []string
	track    *tracker
	watch    *shardWatch
	calls    string // the file every replica records its calls in
	timeout  time.Duration
	profiled bool // the replicas write profiles (a scaling run, with -profile-dir)
	noHooks  bool // no replica serves gopf's webhooks (a latency run)
	mu       sync.Mutex
	replicas []*replica
	next     int                  // the number of the next replica's shard name
	kills    map[string]time.Time // shard name → when it was killed
	res      ShardedRun
}

// replica is one operator process of a sharded run.
type replica struct {
	name     string // its shard name, API user suffix and calls' replica
	user     string
	proc     *process
	startKiB int64    // its peak RSS when the create phase started
	start    memSplit // its RSS then, anonymous and file-backed
	use      usage
	done     bool // stopped or killed
	killed   bool
	left     bool // stopped gracefully before the end of the run
	webhook  bool // it serves gopf's webhooks (the run's first replica)
}

// runSharded runs the scaling runs, the churn, rolling and chaos runs.
func (b *bench) runSharded(ctx context.Context, s Sharded) (*ShardedResult, error) {
	s = s.withDefaults()
	if err := s.check(); err != nil {
		return nil, err
	}
	res := &ShardedResult{Options: s}
	for _, n := range s.Replicas {
		if err := b.addShardRun(ctx, res, fmt.Sprintf("r%d", n), n, nil); err != nil {
			return nil, err
		}
	}
	if s.runs(runLatency) {
		var err error
		if res.Latency, err = b.latencyRuns(ctx, s); err != nil {
			return nil, err
		}
	}
	for _, d := range []struct {
		name    string
		n       int
		disturb disturbance
	}{{runChurn, s.ChurnReplicas, (*shardRun).churn}, {runRoll, s.RollReplicas, (*shardRun).roll}, {runChaos, s.ChaosReplicas, (*shardRun).chaos}} {
		if err := b.addShardRun(ctx, res, d.name, d.n, d.disturb); err != nil {
			return nil, err
		}
	}
	res.evaluate()
	return res, nil
}

// addShardRun runs the run of that name, if res's options ask for it, and
// adds it to res.
func (b *bench) addShardRun(ctx context.Context, res *ShardedResult, name string, n int, disturb disturbance) error {
	if !res.Options.runs(name) {
		return nil
	}
	run, err := b.shardRun(ctx, res.Options, name, n, disturb)
	if err != nil {
		return err
	}
	res.Runs = append(res.Runs, *run)
	return nil
}

// disturbance is what a run does to its replicas while its phases run: it
// starts before the create phase and is told each phase as it starts;
// done stops it. Nil for the scaling runs.
type disturbance func(r *shardRun, ctx context.Context, phases <-chan phaseStart, done <-chan struct{})

// phaseStart tells a disturbance that a phase started, and its waiter.
type phaseStart struct {
	name string
	w    waiter
}

// shardRun runs the basic workload against n replicas of one ring, with
// disturb acting on them meanwhile.
func (b *bench) shardRun(ctx context.Context, s Sharded, name string, n int, disturb disturbance) (*ShardedRun, error) {
	id := "sharded-" + name
	kind := scenario.KopfExample
	if err := b.createNamespace(ctx, id); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	names := namesWith("kex", s.Objects)
	track, err := startTracker(ctx, b.load, b.scheme, kind, id, names)
	if err != nil {
		return nil, err
	}
	r := &shardRun{b: b, s: s, id: id, kind: kind, names: names, track: track, watch: newShardWatch(id),
		calls: filepath.Join(b.work, id+".calls"), timeout: b.opts.PhaseTimeout, kills: map[string]time.Time{},
		res: ShardedRun{Name: name, Replicas: n, Objects: s.Objects}, profiled: disturb == nil && b.opts.ProfileDir != ""}
	track.observeAlso(r.watch.observe)
	if err := os.Remove(r.calls); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	defer r.stopAll()
	b.log("sharded/%s: starting %d replicas", name, n)
	started := time.Now()
	for range n {
		if err := r.startReplica(ctx); err != nil {
			return nil, err
		}
	}
	for _, rep := range r.live() {
		if rss, err := peakRSS(rep.proc.cmd.Process.Pid); err == nil {
			rep.startKiB = rss
		}
		if m, err := residentSplit(rep.proc.cmd.Process.Pid); err == nil {
			rep.start = m
		}
	}
	load := &loadGenerator{c: b.c, kind: kind, ns: id, names: names, workers: b.opts.Workers}
	phases, done := make(chan phaseStart, 4), make(chan struct{})
	var disturbed sync.WaitGroup
	if disturb != nil {
		disturbed.Go(func() { disturb(r, ctx, phases, done) })
	}
	tell := func(name string, w waiter) waiter {
		if disturb != nil {
			phases <- phaseStart{name, w}
		}
		return w
	}
	marks := []mark{{phase: PhaseStartup, at: started}}
	took := map[string]time.Duration{}
	phase := func(name string, send func(context.Context) error, goal func(client.Object) bool) error {
		start := time.Now()
		marks = append(marks, mark{phase: name, at: start})
		w := tell(name, r.track.expect(names, goal))
		doneAt, err := r.await(ctx, name, send, w)
		if err == nil {
			took[name] = doneAt.Sub(start)
		}
		return err
	}
	created := func(o client.Object) bool { return o != nil && scenario.Handled(o, 1, false) }
	updated := func(o client.Object) bool { return o != nil && scenario.Handled(o, 1, true) }
	// In the churn and chaos runs, a phase that does not end is a finding
	// (objects not handled), not a failure of the benchmark.
	unfinished := func(err error) error {
		if err != nil && disturb != nil && ctx.Err() == nil {
			b.log("sharded/%s: %v", name, err)
			r.res.Events = append(r.res.Events, err.Error())
			return nil
		}
		return err
	}
	err = unfinished(phase(PhaseCreate, load.createAll, created))
	if err == nil {
		marks = append(marks, mark{phase: PhaseIdle, at: time.Now()})
		err = r.heapProfiles()
	}
	if err == nil {
		err = sleep(ctx, b.opts.Idle)
	}
	if err == nil {
		err = unfinished(phase(PhaseUpdate, load.updateAll, updated))
	}
	close(done)
	disturbed.Wait()
	if err != nil {
		return nil, fmt.Errorf("sharded/%s: %w", name, err)
	}
	marks = append(marks, mark{phase: PhaseSettle, at: time.Now()})
	r.settle(ctx)
	// A delete phase that does not end is a finding (finalizers left), not
	// a failure of the benchmark.
	if err := phase(PhaseDelete, load.deleteAll, gone); err != nil {
		b.log("sharded/%s: %v", name, err)
	}
	r.res.Left, r.res.FinalizersLeft = r.watch.left(names)
	marks = append(marks, mark{phase: PhaseShutdown, at: time.Now()})
	r.stopAll()
	b.report.clear()
	if err := b.audit.settle(ctx, time.Second); err != nil {
		return nil, err
	}
	if err := r.collect(marks, took); err != nil {
		return nil, err
	}
	b.log("sharded/%s: done in %.0f s", name, time.Since(started).Seconds())
	return &r.res, nil
}

// heapProfiles asks every live replica of a profiled run for its heap
// profile, with the objects idle in its cache.
func (r *shardRun) heapProfiles() error {
	for _, rep := range r.live() {
		if rep.proc.prof.heap != "" {
			if err := rep.proc.profile(syscall.SIGUSR2, rep.proc.prof.heap); err != nil {
				return fmt.Errorf("heap profile of replica %s: %w", rep.name, err)
			}
		}
	}
	return nil
}

// PhaseSettle is the sharded runs' wait, after the update phase, for every
// object to be assigned to a live shard.
const PhaseSettle = "settle"

// startReplica starts the next replica, as an API user of its own, and
// waits until it watches the kind and holds its shard's Lease.
func (r *shardRun) startReplica(ctx context.Context) error {
	r.mu.Lock()
	r.next++
	rep := &replica{name: "shard-" + strconv.Itoa(r.next), webhook: r.next == 1 && !r.noHooks}
	r.mu.Unlock()
	rep.user = r.id + "-" + rep.name
	// The scaling runs' replicas are profiled when profiles are asked for:
	// a heap profile while the objects are idle, a CPU profile at the end.
	var prof profiles
	if r.profiled {
		var err error
		if prof, err = r.b.profiles(rep.user); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(r.b.work, rep.user+".kubeconfig")
	if err := r.b.cp.addOperatorUser(rep.user, kubeconfig); err != nil {
		return err
	}
	env := []string{
		scenario.EnvKind + "=" + r.kind.Name,
		scenario.EnvHandlers + "=1",
		calls.EnvFile + "=" + r.calls,
		calls.EnvReplica + "=" + rep.name,
	}
	if r.res.Name == runChurn || r.res.Name == runRoll {
		env = append(env, scenario.EnvWork+"="+disturbedWork.String())
	}
	// The run's first replica serves gopf's webhooks (dev mode: its own
	// configuration, by URL), so that each create costs the API server one
	// webhook call, as behind a Service, whose one kept-alive connection
	// goes to one replica. Once it is gone, the assigner labels new objects.
	args := []string{"--shard-ring=" + r.id, "--shard-name=" + rep.name, "--shard-namespace=" + r.id}
	if rep.webhook {
		args = append(args, r.b.webhookArgs(rep.user)...)
	}
	proc, err := startProcess(r.b.bins[Gopf.Package], args, kubeconfig, env, r.b.opts.MaxConcurrentReconciles,
		filepath.Join(r.b.work, rep.user+".log"), "", 0, prof)
	if err != nil {
		return err
	}
	rep.proc = proc
	r.mu.Lock()
	r.replicas = append(r.replicas, rep)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	err = r.b.audit.waitFor(ctx, rep.user, func(q request) bool {
		return q.verb == "watch" && q.resource == r.kind.Resource
	})
	for err == nil {
		var lease coordinationv1.Lease
		err = r.b.c.Get(ctx, types.NamespacedName{Namespace: r.id, Name: rep.name}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if err == nil || apierrors.IsNotFound(err) {
			err = sleep(ctx, 100*time.Millisecond)
		}
	}
	select {
	case <-proc.exited:
		return proc.exitError()
	default:
	}
	if err != nil {
		return fmt.Errorf("waiting for replica %s to watch %s and hold its Lease: %w", rep.name, r.kind.Resource, err)
	}
	// New objects get their shard at admission once the API server calls
	// a replica's webhook, rather than from the assigner's list.
	labelled := func(o client.Object) bool { return o.GetLabels()[shardLabelPrefix+r.id] != "" }
	if rep.webhook {
		err = r.b.awaitAdmission(ctx, r.kind, r.id, proc, labelled)
	}
	if err != nil {
		return fmt.Errorf("waiting for replica %s's webhook to label new objects: %w", rep.name, err)
	}
	r.b.log("sharded/%s: replica %s is up", r.res.Name, rep.name)
	return nil
}

// live returns the replicas still running.
func (r *shardRun) live() []*replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*replica
	for _, rep := range r.replicas {
		if !rep.done {
			out = append(out, rep)
		}
	}
	return out
}

// stop stops rep gracefully (SIGTERM) and keeps what it used.
func (r *shardRun) stop(rep *replica) {
	r.mu.Lock()
	if rep.done {
		r.mu.Unlock()
		return
	}
	rep.done = true
	r.mu.Unlock()
	use, err := rep.proc.stop()
	if err != nil {
		r.b.log("sharded/%s: stopping %s: %v", r.res.Name, rep.name, err)
		use = exitedUsage(rep.proc)
	}
	rep.use = use
	r.dropWebhook(rep, true)
}

// dropWebhook deletes the webhook configuration of rep, if it serves one,
// with a warning when warn is set (it should have gone by itself).
func (r *shardRun) dropWebhook(rep *replica, warn bool) {
	if !rep.webhook {
		return
	}
	if err := r.b.removeWebhook(context.Background(), rep.user+".bench.gopf.dev", rep.user, warn); err != nil {
		r.b.log("sharded/%s: removing the webhook configuration of %s: %v", r.res.Name, rep.name, err)
	}
}

// kill kills rep with SIGKILL, as a node or the OOM killer would, and
// keeps what it used and when it was killed.
func (r *shardRun) kill(rep *replica) {
	r.mu.Lock()
	if rep.done {
		r.mu.Unlock()
		return
	}
	rep.done, rep.killed = true, true
	r.mu.Unlock()
	if rss, err := peakRSS(rep.proc.cmd.Process.Pid); err == nil {
		rep.proc.peakKiB = max(rep.proc.peakKiB, rss)
	}
	at := time.Now()
	_ = rep.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-rep.proc.exited
	rep.use = exitedUsage(rep.proc)
	r.mu.Lock()
	r.kills[rep.name] = at
	r.mu.Unlock()
	// As a Service stops sending to a dead Pod: the API server no longer
	// calls the killed replica's webhook.
	r.dropWebhook(rep, false)
	r.b.log("sharded/%s: killed %s", r.res.Name, rep.name)
}

// exitedUsage is what a process that has exited used.
func exitedUsage(p *process) usage {
	u := usage{peakKiB: p.peakKiB}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		u.rusageMaxRSS = ru.Maxrss
	}
	return u
}

// stopAll stops every replica still running.
func (r *shardRun) stopAll() {
	var wg sync.WaitGroup
	for _, rep := range r.live() {
		wg.Go(func() { r.stop(rep) })
	}
	wg.Wait()
}

// await sends a phase's requests and waits until w says the replicas are
// done, within the phase timeout, showing progress.
func (r *shardRun) await(ctx context.Context, name string, send func(context.Context) error, w waiter) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- send(ctx) }()
	done := make(chan struct{})
	var doneAt time.Time
	var waitErr error
	go func() {
		doneAt, waitErr = w.wait(ctx)
		close(done)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		n, of := w.progress()
		r.b.report.status("sharded/%s %s %d/%d, %d replicas", r.res.Name, name, n, of, len(r.live()))
		select {
		case err := <-sent:
			if err != nil {
				return time.Time{}, fmt.Errorf("%s phase: %w", name, err)
			}
			sent = nil
		case <-done:
			if waitErr != nil {
				return time.Time{}, fmt.Errorf("%s phase: waiting for the replicas: %w", name, waitErr)
			}
			r.b.log("sharded/%s: %s: %d objects done", r.res.Name, name, of)
			if sent != nil {
				if err := <-sent; err != nil {
					return time.Time{}, fmt.Errorf("%s phase: %w", name, err)
				}
			}
			return doneAt, nil
		case <-tick.C:
		}
	}
}

// settle waits until every object is assigned to a live replica and none
// is draining, or settleTimeout, and records how many are not.
func (r *shardRun) settle(ctx context.Context) {
	deadline := time.Now().Add(settleTimeout)
	for {
		live := map[string]bool{}
		for _, rep := range r.live() {
			live[rep.name] = true
		}
		n := r.watch.unassigned(r.names, live)
		r.res.Unassigned = n
		if n == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		r.b.report.status("sharded/%s settle: %d objects not on a live shard", r.res.Name, n)
		_ = sleep(ctx, 200*time.Millisecond)
	}
}

// churn starts a replica when half the objects are created and stops the
// oldest one gracefully when half are updated.
func (r *shardRun) churn(ctx context.Context, phases <-chan phaseStart, done <-chan struct{}) {
	for {
		var p phaseStart
		select {
		case p = <-phases:
		case <-done:
			return
		}
		if p.name != PhaseCreate && p.name != PhaseUpdate {
			continue
		}
		if !r.waitHalf(ctx, p.w, done) {
			return
		}
		if p.name == PhaseCreate {
			r.res.Events = append(r.res.Events, fmt.Sprintf("a replica joined with %d/%d objects created", count(p.w), len(r.names)))
			if err := r.startReplica(ctx); err != nil {
				r.b.log("sharded/%s: joining: %v", r.res.Name, err)
			}
			continue
		}
		if live := r.live(); len(live) > 0 {
			r.res.Events = append(r.res.Events, fmt.Sprintf("%s left with %d/%d objects updated", live[0].name, count(p.w), len(r.names)))
			live[0].left = true
			r.stop(live[0])
		}
	}
}

// waitHalf waits until half the objects of w are done; false if done
// closed first.
func (r *shardRun) waitHalf(ctx context.Context, w waiter, done <-chan struct{}) bool {
	for {
		if n, of := w.progress(); 2*n >= of {
			return true
		}
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func count(w waiter) int { n, _ := w.progress(); return n }

// chaos kills the oldest replica every KillEvery from the start of the
// create phase to the end of the update phase, and starts a new one with a
// new shard name in its place.
func (r *shardRun) chaos(ctx context.Context, phases <-chan phaseStart, done <-chan struct{}) {
	tick := time.NewTicker(r.s.KillEvery)
	defer tick.Stop()
	for {
		select {
		case <-phases:
			continue
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		live := r.live()
		if len(live) == 0 {
			continue
		}
		r.kill(live[0])
		r.res.Kills++
		if err := r.startReplica(ctx); err != nil {
			r.b.log("sharded/%s: a replacement: %v", r.res.Name, err)
		}
	}
}

// sleep waits for d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collect fills the run's result from the audit log, the calls and the
// replicas, once every replica has stopped.
func (r *shardRun) collect(marks []mark, took map[string]time.Duration) error {
	prefix := r.id + "-shard-"
	var requests []request
	for _, q := range r.b.audit.requests {
		if strings.HasPrefix(q.user, prefix) {
			requests = append(requests, q)
		}
	}
	cs, err := calls.Read(r.calls)
	if err != nil {
		return err
	}
	end := time.Now()
	var phases []ShardedPhase
	for i, m := range marks {
		to := end
		if i+1 < len(marks) {
			to = marks[i+1].at
		}
		p := ShardedPhase{Name: m.phase}
		if d, ok := took[m.phase]; ok {
			p.Seconds = d.Seconds()
		} else {
			p.Seconds = to.Sub(m.at).Seconds()
		}
		for _, q := range requests {
			if q.isWrite() && !q.at.Before(m.at) && q.at.Before(to) {
				p.Writes++
				if q.resource == "leases" {
					p.LeaseWrites++
				}
			}
		}
		p.LabelWrites = r.watch.labelWrites(m.at, to)
		for _, c := range cs {
			if !c.At.Before(m.at) && c.At.Before(to) {
				p.HandlerCalls++
			}
		}
		phases = append(phases, p)
	}
	r.res.Phases = phases
	objectsBy := map[string]map[string]bool{}
	called := map[string]map[string]bool{}
	for _, c := range cs {
		if called[c.Cause] == nil {
			called[c.Cause] = map[string]bool{}
		}
		called[c.Cause][c.Object] = true
		if c.Cause == "create" {
			if objectsBy[c.Replica] == nil {
				objectsBy[c.Replica] = map[string]bool{}
			}
			objectsBy[c.Replica][c.Object] = true
		}
	}
	r.res.NoCall = map[string]int{}
	for _, cause := range []string{"create", "update", "delete"} {
		for _, name := range r.names {
			if !called[cause][name] {
				r.res.NoCall[cause]++
			}
		}
	}
	for _, rep := range r.replicas {
		writes := 0
		for _, q := range requests {
			if q.user == rep.user && q.isWrite() {
				writes++
			}
		}
		r.res.Processes = append(r.res.Processes, ReplicaResult{Name: rep.name, CPUSeconds: rep.use.cpu.Seconds(),
			PeakRSSKiB: rep.use.peakKiB, StartRSSKiB: rep.startKiB,
			StartAnonKiB: rep.start.AnonKiB, StartFileKiB: rep.start.FileKiB, Created: len(objectsBy[rep.name]), Writes: writes,
			Killed: rep.killed, Left: rep.left})
		r.res.CPUSeconds += rep.use.cpu.Seconds()
	}
	r.res.MovedObjects, r.res.Moves = r.watch.moved()
	r.res.Duplicates = duplicates(cs, r.kills, r.watch.storedAt())
	r.res.CutByKill, r.res.DuplicateCalls = countDuplicates(r.res.Duplicates)
	if len(r.res.Duplicates) > 20 {
		r.res.Duplicates = r.res.Duplicates[:20] // a sample; the counts are whole
	}
	return nil
}
