package shard

import (
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// TokensPerShard is how many places (virtual nodes) each shard takes on a
// Ring, as many as the reference sharder gives it: enough that each of n
// shards gets close to 1/n of the keys.
const TokensPerShard = 100

// Ring is a consistent hash ring over shard names, the reference's: each
// shard takes TokensPerShard tokens, the xxhash64 of its name followed by
// the token's index in decimal ("shard-a0" … "shard-a99"), and a key
// belongs to the shard of the first token at or after the key's xxhash64,
// wrapping round to the smallest token. When a shard joins or leaves, only
// the keys next to its tokens move. A Ring does not change once made and
// is safe for concurrent use.
type Ring struct {
	tokens []uint64          // sorted
	owners map[uint64]string // token → shard
}

// NewRing returns the ring of shards, usually the available shards of
// ShardsOf. The order matters only if two tokens collide (odds of about
// 1 in 10^11 for 100 shards): the shard given later takes the token, as
// in the reference, which is why ShardsOf keeps the Leases' order.
func NewRing(shards ...string) *Ring {
	r := &Ring{
		tokens: make([]uint64, 0, len(shards)*TokensPerShard),
		owners: make(map[uint64]string, len(shards)*TokensPerShard),
	}
	for _, s := range shards {
		for i := range TokensPerShard {
			t := xxhash.Sum64String(s + strconv.Itoa(i))
			r.tokens = append(r.tokens, t)
			r.owners[t] = s
		}
	}
	slices.Sort(r.tokens)
	return r
}

// ShardFor returns the shard that key (ObjectKey, ControllerKey) belongs
// to, or "" if the ring has no shards.
func (r *Ring) ShardFor(key string) string {
	if len(r.tokens) == 0 {
		return ""
	}
	i, _ := slices.BinarySearch(r.tokens, xxhash.Sum64String(key))
	if i == len(r.tokens) {
		i = 0
	}
	return r.owners[r.tokens[i]]
}
