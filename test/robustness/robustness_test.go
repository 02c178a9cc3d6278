package robustness_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/kinds"
	"github.com/gopf-dev/gopf/test/robustness"
)

var (
	cfg    *rest.Config
	scheme = robustness.Scheme()
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(robustness.KilleeEnv); spec != "" {
		// An operator process of a run that kills its operators.
		os.Exit(robustness.RunKillee(spec))
	}
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases", kinds.CRDDir()}},
		BeforeTests: func(cp *envtest.ControlPlane) error {
			cfg = cp.Config
			return nil
		},
		// Every operator and proxy a run started is gone once it is over.
		CheckGoroutines: true,
	})
}

// storages are the storages every class runs with.
var storages = []reconcile.Storage{reconcile.StorageAuto, reconcile.StorageStatus, reconcile.StorageAnnotations, reconcile.StorageKopf}

var storageNames = map[reconcile.Storage]string{
	reconcile.StorageAuto: "StorageAuto", reconcile.StorageStatus: "StorageStatus",
	reconcile.StorageAnnotations: "StorageAnnotations", reconcile.StorageKopf: "StorageKopf",
}

// fixedSeeds are the seeds `make test` runs, one sequence per class and
// storage: the seed of a run is fixedSeeds[(class+storage) % len].
var fixedSeeds = []uint64{7, 9, 31, 35, 42, 44, 49}

// Every class of kind, with every storage that can work on it, keeps
// Kopf's contract through a sequence of random operations: one fixed seed
// each, or the seed GOPF_ROBUSTNESS_SEED gives.
func TestSequences(t *testing.T) {
	seed, given, err := seedFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for ci, class := range robustness.Classes {
		t.Run(class.Name, func(t *testing.T) {
			t.Parallel()
			for si, storage := range storages {
				t.Run(storageNames[storage], func(t *testing.T) {
					if why := class.Skip[storage]; why != "" {
						t.Skip(why)
					}
					s := fixedSeeds[(ci+si)%len(fixedSeeds)]
					if given {
						s = seed
					}
					runOne(t, class, storage, s)
				})
			}
		})
	}
}

// lostRuns are the runs `make test` makes of the faults that lose
// responses: on one class each, the first seed whose sequence, while the
// fault is in force, has each of the operations listed (writes that
// create, change and delete objects, so that state writes, finalizer
// patches and their removal are lost; or a restart right after a lost
// response).
var lostRuns = []struct {
	fault   robustness.Fault
	class   string
	storage reconcile.Storage
	while   []robustness.OpKind
}{
	{robustness.FaultLostReset, "KopfExample", reconcile.StorageAuto, []robustness.OpKind{robustness.OpCreate, robustness.OpSpec, robustness.OpDelete}},
	{robustness.FaultLost502, "ConfigMap", reconcile.StorageAuto, []robustness.OpKind{robustness.OpCreate, robustness.OpLabel, robustness.OpDelete}},
	{robustness.FaultLost502, "Widget", reconcile.StorageAuto, []robustness.OpKind{robustness.OpRestartAfterLost, robustness.OpDelete}},
}

// Lost responses hold the contract with no excuse: a write whose response
// was lost landed, so nothing may run again because of it.
func TestLostResponses(t *testing.T) {
	for _, lr := range lostRuns {
		name := fmt.Sprintf("%s/%s/%s", lr.fault, lr.class, lr.while[0])
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			class, ok := classNamed(lr.class)
			if !ok {
				t.Fatalf("no class %q", lr.class)
			}
			seed, ok := seedWhere(func(s robustness.Sequence) bool { return faultCovers(s, lr.fault, lr.while) })
			if !ok {
				t.Fatalf("no seed below 100000 has %s with %v while it is in force", lr.fault, lr.while)
			}
			h := runOne(t, class, lr.storage, seed)
			lost := 0
			for _, e := range h.Events {
				if e.Kind == robustness.EventLost {
					lost++
				}
			}
			if lost == 0 {
				t.Errorf("seed %d: no response was lost, so the run did not test the fault", seed)
			}
			t.Logf("seed %d: %d operations, %d responses lost", seed, len(robustness.Generate(seed)), lost)
		})
	}
}

// killMoments are the moments the kill run of `make test` covers: a create
// handler killed before its side effect (after gopf persisted the
// finalizer), a delete handler killed while it runs, and a handler killed
// just after it returned, around the write of its outcome.
var killMoments = []string{"before-handler/create", "in-handler/delete", "after-handler/"}

// SIGKILLs of the operator process cut at most the calls whose outcome had
// not landed: those may run again, nothing else does. The run is the first
// seed whose sequence arms kills at every one of killMoments.
func TestKills(t *testing.T) {
	seed, ok := seedWhere(func(s robustness.Sequence) bool { return killsAt(s, killMoments) })
	if !ok {
		t.Fatalf("no seed below 100000 arms kills at %v", killMoments)
	}
	class, _ := classNamed("KopfExample")
	h := runOne(t, class, reconcile.StorageAuto, seed)
	kills := 0
	for _, e := range h.Events {
		if e.Kind == robustness.EventKill {
			kills++
		}
	}
	if kills == 0 {
		t.Errorf("seed %d: no process was killed, so the run did not test kills", seed)
	}
	cut, repeated := robustness.Cuts(h)
	t.Logf("seed %d: %d operations, %d kills, %d calls cut, %d of them repeated", seed, len(robustness.Generate(seed)), kills, cut, repeated)
}

// killsAt reports whether the sequence arms a kill at each of moments
// ("<moment>/<handler>", the handler may be left out).
func killsAt(s robustness.Sequence, moments []string) bool {
	for _, m := range moments {
		if !slices.ContainsFunc(s, func(op robustness.Op) bool {
			return op.Kind == robustness.OpArm && op.Behaviour == robustness.BehaveKill &&
				strings.HasPrefix(string(op.Moment)+"/"+op.Handler, m)
		}) {
			return false
		}
	}
	return true
}

// classNamed returns the class of kind called name.
func classNamed(name string) (robustness.Class, bool) {
	for _, c := range robustness.Classes {
		if c.Name == name {
			return c, true
		}
	}
	return robustness.Class{}, false
}

// seedWhere returns the first seed from 1 whose sequence ok accepts.
func seedWhere(ok func(robustness.Sequence) bool) (uint64, bool) {
	for seed := uint64(1); seed < 100000; seed++ {
		if ok(robustness.Generate(seed)) {
			return seed, true
		}
	}
	return 0, false
}

// faultCovers reports whether, while fault f is in force, the sequence has
// an operation of each kind of while.
func faultCovers(s robustness.Sequence, f robustness.Fault, while []robustness.OpKind) bool {
	seen := map[robustness.OpKind]bool{}
	on := false
	for _, op := range s {
		switch {
		case op.Kind == robustness.OpFaults:
			on = op.Fault == f
		case op.Kind == robustness.OpHeal:
			on = false
		case on:
			seen[op.Kind] = true
		}
	}
	for _, k := range while {
		if !seen[k] {
			return false
		}
	}
	return true
}

// totals count what TestRandomSequences ran.
var sequences, operations atomic.Int64

// faultTally counts, over TestRandomSequences, the fault operations of
// each kind, the restarts right after a lost response, and the operator's
// writes refused and whose responses were lost.
type faultTally struct {
	mu       sync.Mutex
	ops      map[string]int
	lost     int
	refused  int
	kills    map[string]int // by moment
	killing  int            // sequences that kill
	cut      int
	repeated int
	// daemons counts the daemons' starts, their stops by reason, and
	// their iterations.
	daemonStarts int
	daemonStops  map[string]int
	daemonTicks  int
	// timerRuns counts the timer runs begun, timerEnds those that
	// returned.
	timerRuns, timerEnds int
}

func (f *faultTally) add(seq robustness.Sequence, h robustness.History) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq.Kills() {
		f.killing++
	}
	for _, op := range seq {
		switch op.Kind {
		case robustness.OpFaults:
			f.ops[string(op.Fault)]++
		case robustness.OpRestartAfterLost, robustness.OpRestartInHandler, robustness.OpStop:
			f.ops[string(op.Kind)]++
		}
	}
	for _, e := range h.Events {
		switch e.Kind {
		case robustness.EventLost:
			f.lost++
		case robustness.EventRefused:
			f.refused++
		case robustness.EventKill:
			f.kills[strings.Fields(e.Detail)[0]]++
		case robustness.EventDaemonStart:
			f.daemonStarts++
		case robustness.EventDaemonStop:
			f.daemonStops[e.Detail]++
		case robustness.EventTimerStart:
			f.timerRuns++
		case robustness.EventTimerEnd:
			f.timerEnds++
		}
	}
	f.daemonTicks += h.DaemonTicks
	cut, repeated := robustness.Cuts(h)
	f.cut += cut
	f.repeated += repeated
}

func (f *faultTally) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.ops))
	for k := range f.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+2)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, f.ops[k]))
	}
	parts = append(parts, fmt.Sprintf("writes refused %d", f.refused), fmt.Sprintf("responses lost %d", f.lost))
	moments := make([]string, 0, len(f.kills))
	for m := range f.kills {
		moments = append(moments, m)
	}
	sort.Strings(moments)
	total := 0
	for _, m := range moments {
		total += f.kills[m]
		parts = append(parts, fmt.Sprintf("kills %s %d", m, f.kills[m]))
	}
	parts = append(parts, fmt.Sprintf("kills %d in %d sequences", total, f.killing), fmt.Sprintf("calls cut by a kill %d, of them repeated %d", f.cut, f.repeated))
	parts = append(parts, fmt.Sprintf("daemon starts %d, iterations %d", f.daemonStarts, f.daemonTicks))
	reasons := make([]string, 0, len(f.daemonStops))
	for r := range f.daemonStops {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("daemon stops %q %d", r, f.daemonStops[r]))
	}
	parts = append(parts, fmt.Sprintf("timer runs %d, of them ended %d", f.timerRuns, f.timerEnds))
	return strings.Join(parts, ", ")
}

// Random sequences, with seeds from the clock, for as long as
// GOPF_ROBUSTNESS_DURATION says (`make robustness`); skipped without it.
func TestRandomSequences(t *testing.T) {
	d := os.Getenv("GOPF_ROBUSTNESS_DURATION")
	if d == "" {
		t.Skip("GOPF_ROBUSTNESS_DURATION is not set: `make robustness` runs random seeds")
	}
	duration, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("GOPF_ROBUSTNESS_DURATION=%q: %v", d, err)
	}
	tally := &faultTally{ops: map[string]int{}, kills: map[string]int{}, daemonStops: map[string]int{}}
	began := time.Now()
	deadline := began.Add(duration)
	for time.Now().Before(deadline) && !t.Failed() {
		seed := uint64(time.Now().UnixNano())
		class := robustness.Classes[seed%uint64(len(robustness.Classes))]
		storage := storages[(seed/7)%uint64(len(storages))]
		if class.Skip[storage] != "" {
			continue
		}
		t.Run(fmt.Sprintf("%s/%s/%d", class.Name, storageNames[storage], seed), func(t *testing.T) {
			tally.add(robustness.Generate(seed), runOne(t, class, storage, seed))
			sequences.Add(1)
			operations.Add(int64(len(robustness.Generate(seed))))
		})
	}
	t.Logf("ran %d sequences, %d operations, in %s of %s; %s", sequences.Load(), operations.Load(), time.Since(began).Round(time.Second), duration, tally)
	fmt.Printf("robustness: ran %d sequences, %d operations; %s\n", sequences.Load(), operations.Load(), tally)
}

// runOne runs the sequence of seed on class with storage and fails the test
// with the seed, the sequence, the history and the violations if the
// checker finds any. It returns the history.
func runOne(t *testing.T, class robustness.Class, storage reconcile.Storage, seed uint64) robustness.History {
	return runSequence(t, class, storage, robustness.Generate(seed), seed, fmt.Sprintf("seed %d", seed), reproduce(class, storage, seed))
}

// runSequence is runOne with a sequence of the caller's, named what in
// failures, and the command that runs it again.
func runSequence(t *testing.T, class robustness.Class, storage reconcile.Storage, seq robustness.Sequence, seed uint64, what, again string) robustness.History {
	env := envtest.New(t, scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	target := robustness.Target{Ctx: env.Ctx, Config: cfg, Client: c, Scheme: scheme, Namespace: env.Namespace}
	h, err := robustness.RunSequence(target, class, storage, seq, seed)
	if err != nil {
		t.Fatalf("%s: the run failed: %v\nreproduce: %s", what, err, again)
	}
	if v := robustness.Check(h); len(v) > 0 {
		var b strings.Builder
		for _, x := range v {
			fmt.Fprintf(&b, "  %s\n", x)
		}
		t.Errorf("%s broke the contract:\n%s\nsequence:\n%s\nhistory:\n%s\nreproduce: %s",
			what, b.String(), seq, h.Format(), again)
	}
	return h
}

// reproduce is the command that runs a failing sequence again.
func reproduce(class robustness.Class, storage reconcile.Storage, seed uint64) string {
	return fmt.Sprintf("GOPF_ROBUSTNESS_SEED=%d go test ./test/robustness -run 'TestSequences/%s/%s$'", seed, class.Name, storageNames[storage])
}

// seedFromEnv returns the seed GOPF_ROBUSTNESS_SEED gives, if set.
func seedFromEnv() (uint64, bool, error) {
	s := os.Getenv("GOPF_ROBUSTNESS_SEED")
	if s == "" {
		return 0, false, nil
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("GOPF_ROBUSTNESS_SEED=%q: %w", s, err)
	}
	return seed, true, nil
}
