package assign

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/shard"
)

// lead assigns the ring's objects until ctx is done: it watches the
// ring's Leases, assigns unassigned objects as they appear
// (watchUnassigned), claims the Leases of uncertain shards, and runs a
// pass whenever the available shards change, every ResyncPeriod (over
// the objects without an available shard only, while the ring is settled:
// see cadence), and DrainCheckPeriod after a pass that left objects
// draining or failed.
func (a *Assigner) lead(ctx context.Context, log logr.Logger) error {
	view, err := NewView(a.opts.Leases, a.opts.Namespace, a.opts.Ring)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = view.Start(ctx) })
	if !view.WaitForSync(ctx) {
		return nil
	}
	a.resume = a.loadMark(ctx, log)
	a.watchUnassigned(ctx, log, view, &wg)
	var every cadence
	for {
		now, gen := a.opts.Clock.Now(), view.generation()
		shards := a.claim(ctx, log, view, now)
		available := shards.Available()
		if due, narrow := every.next(now, available); due {
			counts, err := a.pass(ctx, log, view, gen, shards, narrow)
			if ctx.Err() != nil {
				return nil
			}
			counts.log(log, available, err)
			if a.opts.OnPass != nil {
				a.opts.OnPass(counts)
			}
			every.done(now, available, narrow, counts, err, a.opts.ResyncPeriod, a.opts.DrainCheckPeriod)
		}
		wake := a.opts.Clock.NewTimer(nextChange(shards, every.due).Sub(now))
		select {
		case <-ctx.Done():
			wake.Stop()
			return nil
		case <-view.Changed():
			wake.Stop()
		case <-wake.C():
		}
	}
}

// nextChange returns the earlier of due and the next moment a shard's
// state changes by itself (an expiry), when the assigner looks again.
func nextChange(shards shard.Shards, due time.Time) time.Time {
	next := due
	for _, s := range shards {
		if !s.Changes.IsZero() && s.Changes.Before(next) {
			next = s.Changes
		}
	}
	return next
}

// claim claims the Leases of the uncertain shards (shard.Claim), with
// optimistic locking: a claim that the shard beat by renewing its Lease
// fails with a conflict, and the shard stays. It returns the shards at
// now, those it claimed Dead.
func (a *Assigner) claim(ctx context.Context, log logr.Logger, view *View, now time.Time) shard.Shards {
	leases := view.leases()
	shards := shard.ShardsOf(leases, now)
	for i, s := range shards {
		if s.State != shard.Uncertain {
			continue
		}
		l := leases[i]
		shard.Claim(&l, now)
		_, err := a.opts.Leases.Leases(l.Namespace).Update(ctx, &l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			log.Info("claimed the Lease of an uncertain shard: it is dead, its objects move", "shard", s.Name)
			shards[i].State = shard.Dead
		case apierrors.IsConflict(err):
			log.V(1).Info("the uncertain shard renewed its Lease before the claim", "shard", s.Name)
		default:
			log.Error(err, "claiming the Lease of an uncertain shard", "shard", s.Name)
		}
	}
	return shards
}
