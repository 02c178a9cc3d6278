package shard_test

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/gopf-dev/gopf/internal/shard"
)

// An assigner's view: from the ring's Leases, the shards that may have
// objects, and the shard an object belongs to, written in its shard label.
func ExampleShards_Ring() {
	now := time.Now()
	renewed := metav1.NewMicroTime(now.Add(-time.Second))
	held := func(name, holder string) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{shard.RingLabel: "widgets"}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(15)), AcquireTime: &renewed, RenewTime: &renewed,
			},
		}
	}
	shards := shard.ShardsOf([]coordinationv1.Lease{held("shard-a", "shard-a"), held("shard-b", ""), held("shard-c", "shard-c")}, now)
	for _, s := range shards {
		fmt.Println(s.Name, s.State)
	}

	widget := &metav1.ObjectMeta{Namespace: "w", Name: "widget-0001"}
	key, _ := shard.ObjectKey(schema.GroupKind{Group: "example.com", Kind: "Widget"}, widget)
	fmt.Printf("%s: %s=%s\n", key, shard.ShardLabel("widgets"), shards.Ring().ShardFor(key))
	// Output:
	// shard-a ready
	// shard-b dead
	// shard-c ready
	// example.com/Widget/w/widget-0001: shard.alpha.sharding.timebertt.dev/widgets=shard-c
}
