//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/kinds"
)

// The load generator's client limits.
const (
	loadQPS   = 500
	loadBurst = 1000
)

// Run runs the benchmark: every scenario of opts, each operator once per
// round. It returns the results, or an error if any run could not complete
// (a missed target is not an error).
func Run(ctx context.Context, opts Options) (*Results, error) {
	opts = opts.withDefaults()
	if err := checkOperators(opts.Operators); err != nil {
		return nil, err
	}
	root := opts.ModuleRoot
	if root == "" {
		var err error
		if root, err = moduleRoot(); err != nil {
			return nil, err
		}
	}
	assets, err := FindAssets(opts.AssetsDir, root)
	if err != nil {
		return nil, err
	}
	work := opts.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "gopf-bench-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	b := &bench{opts: opts, work: work, report: &reporter{progress: opts.Progress, log: opts.Log}}
	b.log = b.report.logf
	res := &Results{
		Date:                    time.Now().UTC(),
		Machine:                 describeMachine(),
		LoadBefore:              loadAverage(),
		ControlPlane:            controlPlaneVersions(assets),
		Objects:                 opts.Objects,
		IdleSeconds:             opts.Idle.Seconds(),
		Rounds:                  opts.Rounds,
		Workers:                 opts.Workers,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}
	if busy(res.LoadBefore, res.Machine.Cores) {
		b.log("warning: the machine is busy (load average %s on %d CPUs); the timings will be noisy", res.LoadBefore, res.Machine.Cores)
	}
	stop, err := b.setUp(ctx, root, assets)
	if err != nil {
		return nil, err
	}
	defer stop()
	for _, sc := range opts.Scenarios {
		sr, err := b.runScenario(ctx, sc)
		if err != nil {
			return nil, err
		}
		res.Scenarios = append(res.Scenarios, *sr)
	}
	if opts.Sharded != nil {
		if res.Sharded, err = b.runSharded(ctx, *opts.Sharded); err != nil {
			return nil, err
		}
	}
	res.LoadAfter = loadAverage()
	return res, nil
}

// setUp builds the operators, starts the control plane and warms it up. The
// function it returns stops the control plane.
func (b *bench) setUp(ctx context.Context, root, assets string) (func(), error) {
	b.bins = map[string]string{}
	for _, op := range b.needed() {
		if _, built := b.bins[op.Package]; built {
			continue
		}
		b.log("building %s (%s)", op.Name, op.Package)
		bin, err := op.build(ctx, root, b.work)
		if err != nil {
			return nil, err
		}
		b.bins[op.Package] = bin
	}
	b.log("starting kube-apiserver and etcd from %s", assets)
	crdDirs := []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "test", "kinds", "crd")}
	cp, err := startControlPlane(assets, crdDirs, b.work)
	if err != nil {
		return nil, err
	}
	stop := func() {
		if err := cp.stop(); err != nil {
			b.log("stopping the control plane: %v", err)
		}
	}
	b.cp, b.audit = cp, newAuditLog(cp.auditLog)
	err = b.newClient()
	if err == nil {
		err = b.warmUp(ctx)
	}
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// runScenario runs every operator on sc once per round, in the order of
// roundOrder, and compares their medians.
func (b *bench) runScenario(ctx context.Context, sc Scenario) (*ScenarioResult, error) {
	sc.Objects, sc.Rounds = b.opts.objects(sc), b.opts.rounds(sc)
	sr := &ScenarioResult{Scenario: sc}
	operators := b.opts.operators(sc)
	for round := 1; round <= sc.Rounds; round++ {
		for _, op := range roundOrder(operators, round, sc.Rounds) {
			rr, err := b.runOne(ctx, sc, op, round)
			if err != nil {
				return nil, fmt.Errorf("scenario %s, operator %s, round %d: %w", sc.Name, op.Name, round, err)
			}
			sr.Runs = append(sr.Runs, *rr)
		}
	}
	for _, op := range operators {
		sr.Medians = append(sr.Medians, medianRun(sr.RunsOf(op.Name)))
	}
	sr.compare()
	return sr, nil
}

// compare checks gopf's medians against every baseline's on the scenario's
// targets: those against the verdict's baseline (verdictBaseline) in
// Targets, the others in Others.
func (s *ScenarioResult) compare() {
	gopf := s.Median(Gopf.Name)
	if gopf == nil {
		return
	}
	verdict := s.verdictBaseline()
	for _, base := range Baselines {
		b := s.Median(base.Name)
		if b == nil {
			continue
		}
		results := evaluate(s.Scenario.targets(), base.Name, b, gopf)
		if base.Name == verdict {
			s.Targets = results
		} else {
			s.Others = append(s.Others, results...)
		}
	}
}

// verdictBaseline names the baseline whose comparison is the scenario's
// verdict: the first of Baselines that ran it (the tuned baseline, where
// it runs); "" if none did.
func (s *ScenarioResult) verdictBaseline() string {
	for _, base := range Baselines {
		if s.Median(base.Name) != nil {
			return base.Name
		}
	}
	return ""
}

// roundOrder is the order the operators run in, in round (from 1) of
// rounds. The machine and the control plane change during a scenario (the
// API server and etcd carry the earlier runs' history, and other work
// comes and goes), so where an operator runs in a round counts. Each round
// starts with the next operator, so that with as many rounds as operators
// each runs once in every place; with two rounds the second runs in the
// reverse order instead, so that the operators that run first and last in
// one run last and first in the other, rather than one of them never
// running first.
func roundOrder(operators []Operator, round, rounds int) []Operator {
	order := slices.Clone(operators)
	if rounds == 2 && round == 2 {
		slices.Reverse(order)
		return order
	}
	for i := range order {
		order[i] = operators[(i+round-1)%len(operators)]
	}
	return order
}

// needed returns the operators the scenarios run.
func (b *bench) needed() []Operator {
	need := map[string]bool{}
	for _, sc := range b.opts.Scenarios {
		for _, op := range b.opts.operators(sc) {
			need[op.Name] = true
		}
	}
	if b.opts.Sharded != nil {
		need[Gopf.Name] = true
	}
	var out []Operator
	for _, op := range Operators {
		if need[op.Name] {
			out = append(out, op)
		}
	}
	return out
}

// bench is the state shared by the runs of one benchmark.
type bench struct {
	opts   Options
	work   string
	bins   map[string]string // operator package → binary
	cp     *controlPlane
	audit  *auditLog
	scheme *runtime.Scheme
	load   *rest.Config // the administrator, with the load generator's limits
	c      client.Client
	report *reporter
	log    func(format string, args ...any)
}

// newClient makes the load generator's client: the administrator, with
// limits high enough never to hold the workload back.
func (b *bench) newClient() error {
	b.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(b.scheme); err != nil {
		return err
	}
	if err := kopfv1.AddToScheme(b.scheme); err != nil {
		return err
	}
	if err := kinds.AddToScheme(b.scheme); err != nil {
		return err
	}
	b.load = rest.CopyConfig(b.cp.admin)
	b.load.QPS, b.load.Burst = loadQPS, loadBurst
	var err error
	b.c, err = client.New(b.load, client.Options{Scheme: b.scheme})
	return err
}

// moduleRoot returns the folder of the go.mod of the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root (go env GOMOD): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("the working directory is not inside the gopf module")
	}
	return filepath.Dir(gomod), nil
}

// createNamespace creates the namespace of a run.
func (b *bench) createNamespace(ctx context.Context, name string) error {
	return b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
