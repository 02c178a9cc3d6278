//go:build linux

package sharder

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/test/bench"
	"github.com/gopf-dev/gopf/test/bench/internal/calls"
	"github.com/gopf-dev/gopf/test/bench/internal/scenario"
)

// concurrency is each replica's workers per controller, the benchmark's
// default.
const concurrency = 16

// replicaStartup bounds a replica's start until it holds its Lease.
const replicaStartup = time.Minute

// ring is gopf's replicas of one ring in one namespace, started from the
// benchmark's operator, each recording its handler calls into one file.
type ring struct {
	name       string // the ring's and the ControllerRing's name
	ns         string // where the objects and the shards' Leases are
	bin        string // the operator
	work       string
	kubeconfig string
	calls      string
	c          client.Client
	next       int
	live       []*replica // in the order they started
}

// replica is one gopf process of the ring.
type replica struct {
	name string
	proc *bench.Process
}

// start starts the next replica, with a new shard name as a Deployment's
// new Pod would have, and waits until it holds its shard's Lease.
func (r *ring) start(ctx context.Context) (*replica, error) {
	r.next++
	rep := &replica{name: "shard-" + strconv.Itoa(r.next)}
	args := []string{"--shard-ring=" + r.name, "--shard-name=" + rep.name, "--shard-namespace=" + r.ns, "--shard-external-assigner"}
	env := []string{scenario.EnvHandlers + "=1", calls.EnvFile + "=" + r.calls, calls.EnvReplica + "=" + rep.name}
	proc, err := bench.StartProcess(r.bin, args, r.kubeconfig, env, concurrency, filepath.Join(r.work, rep.name+".log"))
	if err != nil {
		return nil, err
	}
	rep.proc = proc
	r.live = append(r.live, rep)
	err = poll(ctx, replicaStartup, "replica "+rep.name+" to hold its Lease", func() (bool, error) {
		select {
		case <-proc.Exited():
			return false, proc.ExitError()
		default:
		}
		var lease coordinationv1.Lease
		err := r.c.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: rep.name}, &lease)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", err
	})
	return rep, err
}

// stop stops rep gracefully (SIGTERM), as a Deployment stops a Pod.
func (r *ring) stop(rep *replica) error {
	for i, l := range r.live {
		if l == rep {
			r.live = append(r.live[:i:i], r.live[i+1:]...)
		}
	}
	if err := rep.proc.Stop(); err != nil {
		return fmt.Errorf("stopping replica %s: %w", rep.name, err)
	}
	return nil
}

// stopAll stops every replica still running.
func (r *ring) stopAll() error {
	var first error
	for len(r.live) > 0 {
		if err := r.stop(r.live[0]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// names returns the names of the live replicas.
func (r *ring) names() map[string]bool {
	out := map[string]bool{}
	for _, rep := range r.live {
		out[rep.name] = true
	}
	return out
}

// settled reports, from a list of the objects straight from the API
// server, whether every one of them is labelled for a live replica and
// none is being drained.
func (r *ring) settled(ctx context.Context) (bool, error) {
	var list kopfv1.KopfExampleList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
		return false, err
	}
	live := r.names()
	for _, o := range list.Items {
		_, draining := o.Labels[drainLabelPrefix+r.name]
		if draining || !live[o.Labels[shardLabelPrefix+r.name]] {
			return false, nil
		}
	}
	return true, nil
}

// awaitWebhook waits until the sharder's webhook labels a new object, by
// creating one with server-side dry run: the API server takes a moment to
// call a webhook configuration after it appears.
func (r *ring) awaitWebhook(ctx context.Context) error {
	return poll(ctx, time.Minute, "the sharder's webhook to label new objects", func() (bool, error) {
		obj := scenario.KopfExample.Initial(r.ns, "dry-run")
		if err := r.c.Create(ctx, obj, client.DryRunAll); err != nil {
			return false, err
		}
		return obj.GetLabels()[shardLabelPrefix+r.name] != "", nil
	})
}
