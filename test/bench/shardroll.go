package bench

import (
	"context"
	"fmt"
)

// roll replaces every replica once, in the middle of the update phase, as
// a Deployment's rolling update with a surge of one does: a new replica
// (a new Pod, with a new shard name) starts and holds its Lease, then the
// oldest stops gracefully (SIGTERM), and so on until none of the first
// replicas is left. A graceful stop must hand its objects over without a
// call repeated on another replica.
func (r *shardRun) roll(ctx context.Context, phases <-chan phaseStart, done <-chan struct{}) {
	for {
		var p phaseStart
		select {
		case p = <-phases:
		case <-done:
			return
		}
		if p.name != PhaseUpdate {
			continue
		}
		if !r.waitHalf(ctx, p.w, done) {
			return
		}
		old := r.live()
		r.res.Events = append(r.res.Events, fmt.Sprintf("rolling update of %d replicas began with %d/%d objects updated", len(old), count(p.w), len(r.names)))
		for _, rep := range old {
			if err := r.startReplica(ctx); err != nil {
				r.b.log("sharded/%s: a new replica: %v", r.res.Name, err)
				return
			}
			rep.left = true
			r.stop(rep)
		}
		r.res.Events = append(r.res.Events, fmt.Sprintf("rolling update ended with %d/%d objects updated", count(p.w), len(r.names)))
	}
}
