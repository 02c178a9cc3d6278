package assign_test

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/assign"
	"github.com/gopf-dev/gopf/internal/shard"
)

// What the assigner does to objects of the ring "widgets" when shard-c
// joins shard-a and shard-b, shard-b has just died, and shard-d has missed
// its renewal.
func ExampleDecide() {
	states := map[string]shard.State{"shard-a": shard.Ready, "shard-b": shard.Dead, "shard-c": shard.Ready, "shard-d": shard.Expired}
	on := func(s string, draining bool) *metav1.ObjectMeta {
		o := &metav1.ObjectMeta{Name: "w", Labels: map[string]string{shard.ShardLabel("widgets"): s}}
		if draining {
			o.Labels[shard.DrainLabel("widgets")] = "true"
		}
		return o
	}
	for _, tc := range []struct {
		what   string
		obj    *metav1.ObjectMeta
		choice string
	}{
		{"new", &metav1.ObjectMeta{Name: "w"}, "shard-a"},
		{"on shard-a, its place", on("shard-a", false), "shard-a"},
		{"on shard-a, belongs to shard-c", on("shard-a", false), "shard-c"},
		{"draining from shard-a", on("shard-a", true), "shard-c"},
		{"on dead shard-b", on("shard-b", false), "shard-c"},
		{"on dead shard-b, belongs to shard-d", on("shard-b", false), "shard-d"},
	} {
		d := assign.Decide(tc.obj, "widgets", tc.choice, func(s string) shard.State { return states[s] })
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s %s", tc.what, d.Action, d.Shard)))
	}
	// Output:
	// new: assign shard-a
	// on shard-a, its place: none
	// on shard-a, belongs to shard-c: drain
	// draining from shard-a: none
	// on dead shard-b: reassign shard-c
	// on dead shard-b, belongs to shard-d: defer
}
