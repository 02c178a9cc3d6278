//go:build linux

package bench

import (
	"fmt"
	"io"
	"strings"
)

// ShardedResult holds the runs of the sharded scenario.
type ShardedResult struct {
	Options Sharded      `json:"options"`
	Runs    []ShardedRun `json:"runs"`
	// Latency are the latency runs, with and without gopf's webhook.
	Latency []ShardedLatency `json:"latency,omitempty"`
	// Targets are the targets, checked on the runs.
	Targets []ShardedTarget `json:"targets"`
}

// ShardedRun is one run of the sharded scenario: "r<n>" with n replicas,
// "churn" or "chaos".
type ShardedRun struct {
	Name string `json:"name"`
	// Replicas is how many replicas the run started with.
	Replicas int `json:"replicas"`
	Objects  int `json:"objects"`
	// Phases are startup, create, idle, update, settle, delete and
	// shutdown; Seconds of create, update and delete run to the last object
	// done, of the others to the next phase.
	Phases []ShardedPhase `json:"phases"`
	// Processes are the replicas, in the order they started.
	Processes []ReplicaResult `json:"processes"`
	// CPUSeconds is the CPU time of every replica together.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Events say when the churn run's replica joined and left.
	Events []string `json:"events,omitempty"`
	// MovedObjects moved from one shard to another, Moves times in all.
	MovedObjects int `json:"movedObjects"`
	Moves        int `json:"moves"`
	// DuplicateCalls counts calls for an object and cause that another
	// replica had made before, other than those CutByKill; Duplicates are
	// the first 20 of both kinds.
	DuplicateCalls int         `json:"duplicateCalls"`
	CutByKill      int         `json:"cutByKill"`
	Duplicates     []Duplicate `json:"duplicates,omitempty"`
	// Kills is how many replicas the chaos run killed.
	Kills int `json:"kills,omitempty"`
	// NoCall counts, per cause, the objects whose handler no replica
	// called.
	NoCall map[string]int `json:"noCall"`
	// Unassigned counts the objects not assigned to a live shard (or
	// draining) at the end of the settle phase.
	Unassigned int `json:"unassigned"`
	// Left counts the objects still there at the end of the delete phase,
	// FinalizersLeft those of them with a finalizer.
	Left           int `json:"left"`
	FinalizersLeft int `json:"finalizersLeft"`
}

// ShardedPhase is one phase of a sharded run, all replicas together.
type ShardedPhase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Writes are the replicas' writes; LabelWrites the changes of the
	// objects' sharding labels among them (the assigner's patches and the
	// shards' drain acknowledgements), seen on the objects.
	Writes      int `json:"writes"`
	LabelWrites int `json:"labelWrites"`
	// LeaseWrites are the writes among them to Leases: the shards'
	// renewals and the assigner's election.
	LeaseWrites  int `json:"leaseWrites,omitempty"`
	HandlerCalls int `json:"handlerCalls"`
}

// ReplicaResult is one replica's usage over its life.
type ReplicaResult struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSKiB int64   `json:"peakRSSKiB"`
	// StartRSSKiB is its peak RSS before the create phase (or when it
	// joined): the cost of a replica with no objects.
	StartRSSKiB int64 `json:"startRSSKiB"`
	// StartAnonKiB and StartFileKiB split its RSS at that time (not its
	// peak) into anonymous memory (heap, stacks, the runtime's) and the
	// pages of files, mostly its binary's code and read-only data.
	StartAnonKiB int64 `json:"startAnonKiB,omitempty"`
	StartFileKiB int64 `json:"startFileKiB,omitempty"`
	// Created counts the objects whose create handler it called.
	Created int  `json:"created"`
	Writes  int  `json:"writes"`
	Killed  bool `json:"killed,omitempty"`
	Left    bool `json:"left,omitempty"`
}

// ShardedTarget is one target of the sharded scenario, checked.
type ShardedTarget struct {
	Run    string `json:"run"`
	Metric string `json:"metric"`
	Figure string `json:"figure"`
	Target string `json:"target"`
	Pass   bool   `json:"pass"`
}

// Run returns the run named, or nil.
func (s *ShardedResult) Run(name string) *ShardedRun {
	for i := range s.Runs {
		if s.Runs[i].Name == name {
			return &s.Runs[i]
		}
	}
	return nil
}

// Phase returns the phase named, or an empty one.
func (r *ShardedRun) Phase(name string) ShardedPhase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return ShardedPhase{Name: name}
}

// handlerWritesPerObject is a phase's writes other than the sharding
// labels' and the Leases' per object.
func (r *ShardedRun) handlerWritesPerObject(phase string) float64 {
	p := r.Phase(phase)
	return float64(p.Writes-p.LabelWrites-p.LeaseWrites) / float64(r.Objects)
}

// labelWritesPerObject is a phase's label writes per object.
func (r *ShardedRun) labelWritesPerObject(phase string) float64 {
	return float64(r.Phase(phase).LabelWrites) / float64(r.Objects)
}

// maxReplica returns the highest CPU seconds and peak RSS (KiB) of one
// replica.
func (r *ShardedRun) maxReplica() (cpu float64, rss int64) {
	for _, p := range r.Processes {
		cpu, rss = max(cpu, p.CPUSeconds), max(rss, p.PeakRSSKiB)
	}
	return cpu, rss
}

// The names of the sharded runs other than the scaling runs ("r<n>"),
// and the column that shows them.
const (
	runChurn  = "churn"
	runRoll   = "rolling"
	runChaos  = "chaos"
	columnRun = "run"
)

// disturbed reports whether the run of that name stops, starts or kills
// replicas while its phases run, rather than being a scaling run.
func disturbed(run string) bool { return run == runChurn || run == runRoll || run == runChaos }

// perReplicaSlack is the allowance over a fair share: each of N
// replicas may use 1/N of one replica's figure plus 15 % of that share,
// and all together 1.15 times one replica's CPU.
const perReplicaSlack = 1.15

// evaluate checks the targets.
func (s *ShardedResult) evaluate() {
	s.Targets = nil
	add := func(run, metric, figure, target string, pass bool) {
		s.Targets = append(s.Targets, ShardedTarget{Run: run, Metric: metric, Figure: figure, Target: target, Pass: pass})
	}
	var base *ShardedRun
	for i := range s.Runs {
		r := &s.Runs[i]
		if disturbed(r.Name) {
			continue
		}
		if base == nil {
			base = r
			continue
		}
		n := float64(r.Replicas) / float64(base.Replicas)
		bcpu, brss := base.maxReplica()
		cpu, rss := r.maxReplica()
		share := perReplicaSlack / n
		limit := fairMemory(brss, base.fixedKiB(), r.Replicas/base.Replicas)
		add(r.Name, "peak RSS, highest replica (MiB)", f1(mib(rss)), fmt.Sprintf("≤ %s", f1(mib(limit))), rss <= limit)
		add(r.Name, "CPU, highest replica / 1 replica's", ratio(cpu, bcpu), fmt.Sprintf("≤ %.3f×", share), cpu <= share*bcpu)
		add(r.Name, "CPU, all replicas / 1 replica's", ratio(r.CPUSeconds, base.CPUSeconds), fmt.Sprintf("≤ %.2f×", perReplicaSlack),
			r.CPUSeconds <= perReplicaSlack*base.CPUSeconds)
		for _, ph := range []string{PhaseCreate, PhaseUpdate, PhaseDelete} {
			got, want := r.handlerWritesPerObject(ph), base.handlerWritesPerObject(ph)
			add(r.Name, ph+" writes/object (besides labels)", f2(got), "≤ "+f2(want), got <= want+0.005)
		}
	}
	if base != nil {
		fixed, p := base.fixedKiB(), base.Processes[0]
		add(base.Name, "fixed cost: RSS before objects (MiB; anonymous + file-backed then)",
			fmt.Sprintf("%s (%s + %s)", f1(mib(fixed)), f1(mib(p.StartAnonKiB)), f1(mib(p.StartFileKiB))), "≤ "+f1(fixedCostTarget/1024), fixed <= fixedCostTarget)
	}
	for i := range s.Runs {
		r := &s.Runs[i]
		add(r.Name, "same object and cause by two replicas", fmt.Sprint(r.DuplicateCalls), "0", r.DuplicateCalls == 0)
		if r.Name == runChurn {
			add(r.Name, "objects moved", fmt.Sprint(r.MovedObjects), "> 0", r.MovedObjects > 0)
		}
		if !disturbed(r.Name) {
			continue
		}
		nocall := r.NoCall["create"] + r.NoCall["update"] + r.NoCall["delete"]
		add(r.Name, "objects a handler was not called for (create, update, delete)",
			fmt.Sprintf("%d, %d, %d", r.NoCall["create"], r.NoCall["update"], r.NoCall["delete"]), "0", nocall == 0)
		add(r.Name, "objects unassigned after the run", fmt.Sprint(r.Unassigned), "0", r.Unassigned == 0)
		add(r.Name, "finalizers left", fmt.Sprint(r.FinalizersLeft), "0", r.FinalizersLeft == 0 && r.Left == 0)
	}
	s.evaluateLatency()
}

// fixedCostTarget is the bound on what a replica costs with no
// objects (KiB): its RSS before the create phase.
const fixedCostTarget = 25 * 1024

// fixedKiB is the run's fixed cost: the highest RSS of a replica before
// the objects came.
func (r *ShardedRun) fixedKiB() int64 {
	var kib int64
	for _, p := range r.Processes {
		kib = max(kib, p.StartRSSKiB)
	}
	return kib
}

// fairMemory is the bound on the peak RSS of each of n replicas
// (KiB): 1/n of what one replica's peak adds to its fixed cost, plus the
// fixed cost, which every replica pays.
func fairMemory(peak1, fixed int64, n int) int64 {
	return (peak1-fixed)/int64(max(n, 1)) + fixed
}

// split shows a replica's RSS before objects as anonymous + file-backed,
// or "–" when it was not measured (a replica that joined mid-run).
func split(p ReplicaResult) string {
	if p.StartAnonKiB == 0 {
		return "–"
	}
	return f1(mib(p.StartAnonKiB)) + " + " + f1(mib(p.StartFileKiB))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f×", a/b)
}

// passed counts the targets met and all targets.
func (s *ShardedResult) passed() (pass, total int) {
	for _, t := range s.Targets {
		if t.Pass {
			pass++
		}
	}
	return pass, len(s.Targets)
}

func (s *ShardedResult) targetTable() *table {
	t := &table{header: []string{columnRun, "metric", "figure", "target", "result"}, align: "llrrl"}
	for _, x := range s.Targets {
		t.add(x.Run, x.Metric, x.Figure, x.Target, resultMark(x.Pass))
	}
	return t
}

// runTable has a line per run: times, writes per object, moves,
// duplicates.
func (s *ShardedResult) runTable() *table {
	t := &table{header: []string{columnRun, "replicas", "create (s)", "update (s)", "delete (s)",
		"writes/object create, update, delete (besides labels)", "label writes/object create, settle",
		"CPU all (s)", "moved objects (moves)", "duplicates", "cut by a kill", "kills"}, align: "lrrrrlllrrrrr"}
	for _, r := range s.Runs {
		t.add(r.Name, fmt.Sprint(r.Replicas), f2(r.Phase(PhaseCreate).Seconds), f2(r.Phase(PhaseUpdate).Seconds), f2(r.Phase(PhaseDelete).Seconds),
			fmt.Sprintf("%s, %s, %s", f2(r.handlerWritesPerObject(PhaseCreate)), f2(r.handlerWritesPerObject(PhaseUpdate)), f2(r.handlerWritesPerObject(PhaseDelete))),
			fmt.Sprintf("%s, %s", f2(r.labelWritesPerObject(PhaseCreate)), f2(r.labelWritesPerObject(PhaseSettle))),
			f2(r.CPUSeconds), fmt.Sprintf("%d (%d)", r.MovedObjects, r.Moves), fmt.Sprint(r.DuplicateCalls), fmt.Sprint(r.CutByKill), fmt.Sprint(r.Kills))
	}
	return t
}

// replicaTable has a line per replica of every run.
func (s *ShardedResult) replicaTable() *table {
	base := 0.0
	var baseRSS int64
	if len(s.Runs) > 0 {
		base, baseRSS = s.Runs[0].maxReplica()
	}
	t := &table{header: []string{columnRun, "replica", MetricCPUSeconds, "CPU / 1 replica's", MetricPeakRSS, "peak RSS / 1 replica's",
		"RSS before objects (MiB)", "anonymous + file-backed then (MiB)", "objects created", MetricWrites, "end"}, align: "llrrrrrrrrl"}
	for _, r := range s.Runs {
		for _, p := range r.Processes {
			end := "stopped"
			switch {
			case p.Killed:
				end = "killed"
			case p.Left:
				end = "left"
			}
			t.add(r.Name, p.Name, f2(p.CPUSeconds), ratio(p.CPUSeconds, base), f1(float64(p.PeakRSSKiB)/1024),
				ratio(float64(p.PeakRSSKiB), float64(baseRSS)), f1(mib(p.StartRSSKiB)), split(p), fmt.Sprint(p.Created),
				fmt.Sprint(p.Writes), end)
		}
	}
	return t
}

// writeText prints the sharded scenario's tables.
func (s *ShardedResult) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nScenario sharded (%d objects per run)\n\n", s.Options.Objects)
	fmt.Fprint(w, s.targetTable().text())
	fmt.Fprintln(w)
	fmt.Fprint(w, s.runTable().text())
	fmt.Fprintln(w)
	fmt.Fprint(w, s.replicaTable().text())
	if len(s.Latency) > 0 {
		fmt.Fprintln(w)
		fmt.Fprint(w, s.latencyTable().text())
	}
	pass, total := s.passed()
	fmt.Fprintf(w, "\n%d of %d sharding targets met.\n", pass, total)
}

// markdown renders the sharded scenario's section.
func (s *ShardedResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o := s.Options
	pass, total := s.passed()
	w("## Scenario sharded\n\n")
	w("gopf's operator (`test/bench/gopfop`) as replicas of one ring (`--shard-ring`, docs/sharding.md), each a process with its ")
	w("own `--shard-name` and API user, on the basic workload with %d objects: the scaling runs with %s replicas, ", o.Objects, joinInts(o.Replicas))
	w("*churn* (%d replicas; one joins when half the objects are created, the oldest leaves with SIGTERM when half are updated), ", o.ChurnReplicas)
	w("*rolling* (%d replicas; when half the objects are updated, each is replaced as a rolling update does: a new one with a new shard name starts, then the oldest stops with SIGTERM) ", o.RollReplicas)
	w("and *chaos* (%d replicas; every %s the oldest is killed with SIGKILL and a new one, with a new shard name, takes its place, ", o.ChaosReplicas, o.KillEvery)
	w("from the start of the create phase to the end of the update phase). In *churn* and *rolling* the handler calls of every tenth object take %s, ", disturbedWork)
	w("returning early if its context ends, so that a replica that stops has calls in flight.\n\n")
	if len(o.Runs) > 0 {
		w("Only these runs ran (`-sharded-runs`): %s.\n\n", strings.Join(o.Runs, ", "))
	}
	w("%d of %d targets met.\n\n%s\n", pass, total, s.targetTable().markdown())
	w("Per run (writes and handler calls of all replicas together):\n\n%s\n", s.runTable().markdown())
	w("Per replica (ratios to the one replica of the first run):\n\n%s\n", s.replicaTable().markdown())
	if len(s.Latency) > 0 {
		w("Create latency, with and without gopf's webhook:\n\n%s\n", s.latencyTable().markdown())
	}
	for _, r := range s.Runs {
		if len(r.Events) > 0 {
			w("In *%s*: %s.\n\n", r.Name, strings.Join(r.Events, "; "))
		}
		for _, d := range r.Duplicates {
			cut := ""
			if d.CutByKill {
				cut = ", cut by the kill of " + d.First
			}
			w("- %s: %s of %s by %s, again by %s%s\n", r.Name, d.Cause, d.Object, d.First, d.Again, cut)
		}
	}
	w("\n%s", shardedNotes)
	return b.String()
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	if len(s) > 1 {
		return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
	}
	return strings.Join(s, "")
}

// shardedNotes explains the sharded scenario's figures.
const shardedNotes = `### How the sharded scenario is measured

- **Replicas.** Each replica is a separate gopfop process started with the flags of the other runs plus
  ` + "`--shard-ring=<run> --shard-name=shard-<i> --shard-namespace=<run>`" + `, as an API user of its own. The
  run's first replica also serves gopf's webhooks in dev mode (` + "`--webhook-finalizers=always`" + `, its own
  configuration, by URL), so that each create costs one webhook call, as behind a Service whose kept-alive
  connection reaches one replica: new objects get gopf's finalizer and their shard label at admission. The
  embedded assigner (elected among the replicas) labels what the webhook missed (after that replica was killed
  or left) and moves objects when replicas come and go; a killed replica's webhook configuration is deleted at
  once, as a Service stops routing to a dead Pod. The benchmark creates the objects only once every replica holds
  its Lease and the webhook labels new objects, so that the scaling runs move nothing.
- **Per replica.** A replica's CPU is its user plus system time over its whole life (from its rusage at exit), its
  peak RSS its ` + "`VmHWM`" + `; the figure compared is the highest replica's, against the one replica of the first run.
  *RSS before objects* is the replica's peak RSS when the create phase started (or when it joined): what a replica
  costs with no objects, its *fixed cost* F, which does not shrink with N. The memory target (the issue's): each of
  N replicas' peak RSS at most (P₁ − F)/N + F, where P₁ is the one replica's peak and F its fixed cost; and F at
  most 25 MiB, shown with its split at that time (` + "`/proc/<pid>/smaps_rollup`" + `) into anonymous memory (heap,
  stacks, the Go runtime's) and file-backed pages (the binary's code and read-only data it touched). The CPU
  target: at most 1.15/N of the one replica's (a fair share of 1/N plus 15 %); all replicas' together at most
  1.15 times it.
- **Writes.** The replicas' writes come from the audit log, per phase. The sharding labels' changes are seen on
  the objects (each is one patch: the assigner labelling an object, marking it for drain, or a shard removing its
  labels to hand it over) and counted apart as *label writes*, as are the writes to Leases (each replica renews its
  shard's Lease every 2 s; one replica holds the assigner's); *writes/object besides labels* is what the handlers
  cost, to compare with the single replica's (1, 1 and 1 with the finalizer added at admission). (Reports before
  the Lease writes were counted apart include them there; reports before the webhooks were on show 2 writes per
  create and one label write per object, the assigner's, at most 20 a second.)
- **Moves** are changes of an object's shard label from one shard to another (through a drain or not).
- **Duplicates.** Every handler call is recorded with its replica (` + "`test/bench/internal/calls`" + `). A duplicate is a
  call for an object and cause that a different replica made before. It is *cut by a kill* when the earlier
  replica was killed after its call began and before the later one, and the object was not seen with the
  outcome stored before the kill: the handler ran, but its outcome was never written, and gopf runs it again.
- **Create latency.** Apart from those runs, for each of ` + "`LatencyReplicas`" + ` (1 and 4) a ring of its own is started
  twice: with the first replica serving gopf's webhooks, which labels each new object for its shard at admission,
  and with none, where the elected assigner labels each new object as its watch of unassigned objects brings it.
  Once the replicas are up, 500 objects are created one after the other at 50 a second (below the assigner's 100
  writes a second); the figure is, per object, the time from the API server's answer to its create to the first
  call of its create handler. The target: without the webhook, p50 and p99 at most 1 s above the webhook's.
- **Settle.** After the update phase the benchmark waits (at most 3 minutes) until every object is assigned to a
  live replica and none is draining; *unassigned* counts those that are not. *Finalizers left* counts the objects
  still there when the delete phase ended (or timed out).
`
