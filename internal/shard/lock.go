package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// HolderAnnotation, on a shard's Lease, names the process that holds it.
// The Lease's holder identity is the shard's name, as the reference
// design's sharder expects; two replicas given the same shard name
// (a shared host name, a --shard-name in a Deployment's args) would both
// take that identity for their own and both work on every object of the
// shard. The annotation tells them apart: a replica holds the shard only
// if the Lease names its process, and waits while another live process
// does.
const HolderAnnotation = "gopf.dev/shard-holder"

// heldElsewhere is the holder identity a member's elector sees while a
// Lease with the member's own identity is held by another process: any
// identity but the member's own makes the elector wait for a release or
// for the Lease to expire, as it waits for another shard's Lease.
func heldElsewhere(shard, process string) string {
	return shard + " (process " + process + ")"
}

// processLock is the resource lock of a shard's Lease: client-go's
// election on a coordination/v1 Lease, whose holder identity is the
// shard's name, with the holding process in HolderAnnotation (see there).
type processLock struct {
	leases    coordinationv1client.LeasesGetter
	namespace string
	name      string // the shard's
	process   string // this process's token
	labels    map[string]string
	log       logr.Logger
	elsewhere func() // called when another process holds the shard; may be nil

	mu     sync.Mutex
	lease  *coordinationv1.Lease // as last read or written
	warned bool                  // the shard was said to be held elsewhere; cleared once it is ours
	keep   bool                  // leave the Lease to expire instead of releasing it
}

var _ resourcelock.Interface = (*processLock)(nil)

func newProcessLock(leases coordinationv1client.LeasesGetter, namespace, shard string, labels map[string]string) *processLock {
	return &processLock{leases: leases, namespace: namespace, name: shard, labels: labels, process: rand.String(10), log: logr.Discard()}
}

// Get returns the Lease's record as the elector must see it: held by
// another identity while another process holds the shard.
func (l *processLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	lease, err := l.leases.Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = lease
	rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	if other := lease.Annotations[HolderAnnotation]; rec.HolderIdentity == l.name && other != l.process {
		rec.HolderIdentity = heldElsewhere(l.name, other)
		if !l.warned {
			l.warned = true
			if l.elsewhere != nil {
				l.elsewhere()
			}
			l.log.Info("another process holds this shard's Lease under the same shard name: this replica handles nothing "+
				"until that process releases the Lease or stops renewing it; give each replica its own --shard-name",
				"lease", l.Describe(), "holder", other)
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	return rec, raw, nil
}

// Create makes the Lease, held by this process.
func (l *processLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: l.name}}
	l.fill(lease, rec)
	created, err := l.leases.Leases(l.namespace).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = created
	return nil
}

// Update writes rec over the Lease as last seen, with its resourceVersion:
// of two processes that saw it free, one wins. The release that ends the
// election is not written once keepOnRelease was called.
func (l *processLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	if l.lease == nil {
		l.mu.Unlock()
		return errors.New("the Lease was not read before its update")
	}
	if rec.HolderIdentity == "" && l.keep {
		l.mu.Unlock()
		return nil
	}
	lease := l.lease.DeepCopy()
	l.mu.Unlock()
	l.fill(lease, rec)
	updated, err := l.leases.Leases(l.namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = updated
	if rec.HolderIdentity == l.name {
		l.warned = false
	}
	return nil
}

// fill sets the Lease's spec from rec, the ring's labels and this process
// as the holder.
func (l *processLock) fill(lease *coordinationv1.Lease, rec resourcelock.LeaderElectionRecord) {
	lease.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&rec)
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	for k, v := range l.labels {
		lease.Labels[k] = v
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[HolderAnnotation] = l.process
}

// keepOnRelease makes the election's final release a no-op: the Lease is
// left to expire, so that no other shard is given the objects while work
// of this process may still run on them.
func (l *processLock) keepOnRelease() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keep = true
}

// RecordEvent does nothing: joining and leaving are logged by the member.
func (*processLock) RecordEvent(string) {}

// Identity is the shard's name, which the Lease names as its holder.
func (l *processLock) Identity() string { return l.name }

// Describe names the Lease.
func (l *processLock) Describe() string { return fmt.Sprintf("%s/%s", l.namespace, l.name) }
