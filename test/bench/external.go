//go:build linux

package bench

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// This file lends the benchmark's pieces to other test programs of the
// repository (test/bench/sharder), so that they build, run and load gopf's
// operator exactly as the benchmark does.

// BuildGopf builds the benchmark's gopf operator (package gopfop) of the
// module at root into dir and returns the binary's path.
func BuildGopf(ctx context.Context, root, dir string) (string, error) {
	return Gopf.build(ctx, root, dir)
}

// Process is an operator process started as the benchmark starts its
// operators: with the flags every operator gets (no probes, no metrics,
// errors only, the benchmark's client limits), and killed if the process
// that started it dies.
type Process struct{ p *process }

// StartProcess runs the operator bin with args after the common flags, as
// the user of kubeconfig, with env added to its environment, concurrency
// workers per controller and its output going to logPath.
func StartProcess(bin string, args []string, kubeconfig string, env []string, concurrency int, logPath string) (*Process, error) {
	p, err := startProcess(bin, args, kubeconfig, env, concurrency, logPath, "", 0, profiles{})
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// Stop stops the process with SIGTERM and waits for it, killing it after
// 30 s. The error says if it had exited before, with the end of its
// output, or had to be killed.
func (p *Process) Stop() error {
	_, err := p.p.stop()
	return err
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.p.exited }

// ExitError describes a process that has exited, with the end of its
// output.
func (p *Process) ExitError() error { return p.p.exitError() }

// Names returns the names of n objects as the benchmark names them:
// prefix-00000 and on.
func Names(prefix string, n int) []string { return namesWith(prefix, n) }

// Load sends the basic workload's requests for KopfExamples in one
// namespace, from a pool of workers, as the benchmark does.
type Load struct{ g *loadGenerator }

// NewLoad returns the load for the named KopfExamples in ns, sent through
// c by workers goroutines.
func NewLoad(c client.Client, ns string, names []string, workers int) *Load {
	return &Load{g: &loadGenerator{c: c, kind: scenario.KopfExample, ns: ns, names: names, workers: workers}}
}

// Of returns the load for some of the objects only.
func (l *Load) Of(names []string) *Load { return &Load{g: l.g.of(names, nil)} }

// CreateAll creates every object, with spec.field "initial".
func (l *Load) CreateAll(ctx context.Context) error { return l.g.createAll(ctx) }

// UpdateAll sets spec.field of every object to "updated".
func (l *Load) UpdateAll(ctx context.Context) error { return l.g.updateAll(ctx) }

// DeleteAll deletes every object; the operator's finalizer holds each
// until its delete handling is done.
func (l *Load) DeleteAll(ctx context.Context) error { return l.g.deleteAll(ctx) }
