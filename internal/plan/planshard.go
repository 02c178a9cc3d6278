package plan

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/shard"
)

// shardStatus reads where obj stands in ring, from its sharding labels; with
// ring "", in the ring its labels name (the first in order). It is nil when
// obj carries no sharding label of the ring.
func shardStatus(obj metav1.Object, ring string) *ShardStatus {
	if ring == "" {
		ring = labelledRing(obj.GetLabels())
	}
	if ring == "" {
		return nil
	}
	st := &ShardStatus{Ring: ring, Name: shard.AssignedShard(obj, ring), Draining: shard.Draining(obj, ring)}
	if st.Name == "" && !st.Draining {
		return nil
	}
	return st
}

// labelledRing is the first ring in order that a shard or drain label of
// labels names, or "".
func labelledRing(labels map[string]string) string {
	var rings []string
	for key := range labels {
		for _, prefix := range []string{shard.ShardLabelPrefix, shard.DrainLabelPrefix} {
			if ring, ok := strings.CutPrefix(key, prefix); ok && ring != "" {
				rings = append(rings, ring)
			}
		}
	}
	if len(rings) == 0 {
		return ""
	}
	sort.Strings(rings)
	return rings[0]
}

// shardCell describes an object's shard in a table cell: its name, with
// "(draining)" while the assigner moves it, "-" for none.
func shardCell(st *ShardStatus) string {
	switch {
	case st == nil:
		return "-"
	case st.Name == "":
		return "- (draining)"
	case st.Draining:
		return st.Name + " (draining)"
	default:
		return st.Name
	}
}
