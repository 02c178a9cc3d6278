package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/shard"
)

// handOverPoll is how often a hand-over checks whether the object's
// daemons have stopped, besides the wake-up their end sends.
const handOverPoll = time.Second

// handOver gives up an object that the ring's assigner is moving to
// another shard (its drain label is set), as the sharding protocol asks:
// no handler runs on it any more (a handler call in flight has finished:
// the object's reconciles never overlap), what the process knows and has
// not stored (a failed write, quiet retries) is written first, its timers
// stop and its daemons are asked to stop and waited for; then both the
// shard and the drain label go in one patch,
// which acknowledges the drain, and the object leaves this shard's cache.
// Its progress stays on it: the next shard goes on from there, as gopf
// goes on after a restart.
func (t *turn) handOver(ctx context.Context, ring string) (reconcile.Result, error) {
	k, key := t.k, client.ObjectKeyFromObject(t.obj)
	if t.flushing {
		return t.flush(ctx)
	}
	if t.mem.Unsaved != nil {
		// What this process knows is not stored yet (a write failed, or
		// quiet retries wait for the next one): store it first, or the
		// next shard would call a handler that finished here again.
		if err := t.write(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}
	if k.Spawner != nil && !k.Spawner.Stop(key, handlers.StopHandedOver) {
		t.log.V(1).Info("handing the object over once its daemons have stopped")
		return reconcile.Result{RequeueAfter: handOverPoll}, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": t.obj.GetResourceVersion(),
		"labels":          map[string]any{shard.ShardLabel(ring): nil, shard.DrainLabel(ring): nil},
	}})
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := k.writer.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("handing %s %s over to another shard: %w", k.GVK.Kind, key, err)
	}
	k.Memory.Forget(key)
	if k.Spawner != nil {
		k.Spawner.Forget(key)
	}
	t.log.Info("handed the object over to another shard", "ring", ring)
	return reconcile.Result{}, nil
}
