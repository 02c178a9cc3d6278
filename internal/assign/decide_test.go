package assign

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/shard"
)

const ring = "widgets"

func TestDecideFollowsTheDrainHandshakeAndMovesNothingOntoOrOffAShardThatMissedItsRenewal(t *testing.T) {
	states := map[string]shard.State{"a": shard.Ready, "b": shard.Ready, "late": shard.Expired, "later": shard.Uncertain, "dead": shard.Dead}
	state := func(s string) shard.State { return states[s] }
	on := func(s string) map[string]string { return map[string]string{shard.ShardLabel(ring): s} }
	draining := func(s string) map[string]string {
		return map[string]string{shard.ShardLabel(ring): s, shard.DrainLabel(ring): "true"}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		what       string
		labels     map[string]string
		deleting   bool
		finalizers []string
		choice     string
		want       Decision
	}{
		{"unassigned", nil, false, nil, "a", Decision{Assign, "a"}},
		{"unassigned, other rings' labels only", map[string]string{shard.ShardLabel("other"): "x"}, false, nil, "a", Decision{Assign, "a"}},
		{"unassigned with a leftover drain label", map[string]string{shard.DrainLabel(ring): "true"}, false, nil, "b", Decision{Assign, "b"}},
		{"unassigned, being deleted, no finalizer", nil, true, nil, "a", Decision{}},
		{"unassigned, being deleted, finalizers to remove", nil, true, []string{"gopf.dev/x"}, "a", Decision{Assign, "a"}},
		{"unassigned, no shard available", nil, false, nil, "", Decision{}},
		{"on the ring's choice", on("a"), false, nil, "a", Decision{}},
		{"on a live shard, the ring picks another", on("a"), false, nil, "b", Decision{Action: Drain}},
		{"on a live shard, being deleted, the ring picks another", on("a"), true, []string{"f"}, "b", Decision{Action: Drain}},
		{"draining from a live shard", draining("a"), false, nil, "b", Decision{}},
		{"draining, but back on the ring's choice", draining("a"), false, nil, "a", Decision{}},
		{"on a dead shard", on("dead"), false, nil, "a", Decision{Reassign, "a"}},
		{"draining from a shard that died", draining("dead"), false, nil, "b", Decision{Reassign, "b"}},
		{"on a dead shard, being deleted", on("dead"), true, []string{"f"}, "b", Decision{Reassign, "b"}},
		{"on a dead shard, no shard available", on("dead"), false, nil, "", Decision{}},
		{"on no member at all", on("gone"), false, nil, "a", Decision{Reassign, "a"}},
		{"unassigned, the ring picks a shard that missed its renewal", nil, false, nil, "late", Decision{Action: Defer}},
		{"unassigned, the ring picks an uncertain shard", nil, false, nil, "later", Decision{Action: Defer}},
		{"on a dead shard, the ring picks a shard that missed its renewal", on("dead"), false, nil, "late", Decision{Action: Defer}},
		{"on a shard that missed its renewal, its place", on("late"), false, nil, "late", Decision{}},
		{"on a shard that missed its renewal, the ring picks another", on("late"), false, nil, "a", Decision{Action: Defer}},
		{"on an uncertain shard, the ring picks another", on("later"), false, nil, "a", Decision{Action: Defer}},
		{"on a live shard, the ring picks one that missed its renewal", on("a"), false, nil, "late", Decision{Action: Defer}},
		{"draining from a shard that missed its renewal", draining("late"), false, nil, "a", Decision{}},
	} {
		obj := &metav1.ObjectMeta{Name: "w", Labels: tc.labels, Finalizers: tc.finalizers}
		if tc.deleting {
			obj.DeletionTimestamp = &now
		}
		if got := Decide(obj, ring, tc.choice, state); got != tc.want {
			t.Errorf("%s: %v %q, want %v %q", tc.what, got.Action, got.Shard, tc.want.Action, tc.want.Shard)
		}
	}
}

func TestAPassTakesTheRingAgainWhenAShardsAvailabilityReadinessOrUncertaintyChanges(t *testing.T) {
	for _, tc := range []struct {
		was, now shard.State
		want     bool
	}{
		{shard.Ready, shard.Ready, false},
		{shard.Ready, shard.Expired, true},     // Defer sees it
		{shard.Expired, shard.Uncertain, true}, // to claim
		{shard.Uncertain, shard.Dead, true},    // claimed: unavailable
		{shard.Dead, shard.Orphaned, false},
		{shard.Unknown, shard.Ready, true}, // joined
		{shard.Ready, shard.Unknown, true}, // its Lease deleted
		{shard.Unknown, shard.Dead, false},
	} {
		if got := changes(tc.was, tc.now); got != tc.want {
			t.Errorf("%v to %v: %v, want %v", tc.was, tc.now, got, tc.want)
		}
	}
}
