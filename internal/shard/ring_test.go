package shard

import (
	"fmt"
	"testing"
)

func TestAnEmptyRingHasNoShardForAnyKey(t *testing.T) {
	if got := NewRing().ShardFor("apps/Deployment/ns/web"); got != "" {
		t.Errorf("ShardFor on an empty ring = %q, want \"\"", got)
	}
}

func TestKeysSpreadEvenlyOverTheShards(t *testing.T) {
	shards := []string{"s0", "s1", "s2", "s3", "s4"}
	ring := NewRing(shards...)
	const n = 50_000
	counts := map[string]int{}
	for i := range n {
		counts[ring.ShardFor(fmt.Sprintf("example.com/Widget/ns-%d/widget-%d", i%37, i))]++
	}
	// With 100 tokens per shard, each share stays well within ±30 % of the
	// fair one.
	fair := n / len(shards)
	for _, s := range shards {
		if c := counts[s]; c < fair*7/10 || c > fair*13/10 {
			t.Errorf("shard %s got %d of %d keys, far from %d: %v", s, c, n, fair, counts)
		}
	}
}

func TestAJoiningShardTakesKeysOnlyFromOthersAndAboutItsShare(t *testing.T) {
	before := NewRing("s0", "s1", "s2", "s3")
	after := NewRing("s0", "s1", "s2", "s3", "s4")
	const n = 20_000
	moved := 0
	for i := range n {
		key := fmt.Sprintf("kopf.dev/KopfExample/default/example-%d", i)
		was, is := before.ShardFor(key), after.ShardFor(key)
		if was == is {
			continue
		}
		moved++
		if is != "s4" {
			t.Fatalf("%q moved from %s to %s, not to the joining shard", key, was, is)
		}
	}
	// The joining shard's fair share is 1/5 of the keys.
	if moved < n/10 || moved > n*3/10 {
		t.Errorf("%d of %d keys moved when a fifth shard joined, want about %d", moved, n, n/5)
	}
}

func TestTheOrderOfShardsDoesNotChangeAssignments(t *testing.T) {
	a, b := NewRing("s0", "s1", "s2"), NewRing("s2", "s0", "s1")
	for i := range 1000 {
		key := fmt.Sprintf("/ConfigMap/ns/cm-%d", i)
		if a.ShardFor(key) != b.ShardFor(key) {
			t.Fatalf("%q belongs to %s or %s depending on the order of the shards", key, a.ShardFor(key), b.ShardFor(key))
		}
	}
}
