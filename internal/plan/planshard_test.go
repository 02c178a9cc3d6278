package plan

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAnObjectsShardIsReadFromItsShardingLabels(t *testing.T) {
	const shardKey, drainKey = "shard.alpha.sharding.timebertt.dev/gopf", "drain.alpha.sharding.timebertt.dev/gopf"
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ring   string
		want   *ShardStatus
	}{
		{"assigned", map[string]string{shardKey: "shard-a", "app": "x"}, "gopf", &ShardStatus{Ring: "gopf", Name: "shard-a"}},
		{"draining", map[string]string{shardKey: "shard-a", drainKey: "true"}, "gopf", &ShardStatus{Ring: "gopf", Name: "shard-a", Draining: true}},
		{"drained, not assigned yet", map[string]string{"app": "x"}, "gopf", nil},
		{"a drain label only", map[string]string{drainKey: "true"}, "gopf", &ShardStatus{Ring: "gopf", Draining: true}},
		{"the ring from the labels", map[string]string{shardKey: "shard-a"}, "", &ShardStatus{Ring: "gopf", Name: "shard-a"}},
		{"the first of two rings", map[string]string{shardKey: "shard-a", "shard.alpha.sharding.timebertt.dev/alpha": "s1"}, "",
			&ShardStatus{Ring: "alpha", Name: "s1"}},
		{"another ring than the operator's", map[string]string{"shard.alpha.sharding.timebertt.dev/other": "s1"}, "gopf", nil},
		{"no labels", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shardStatus(&metav1.ObjectMeta{Labels: tc.labels}, tc.ring)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func TestTheStatusTableOfAShardedOperatorShowsEachObjectsShard(t *testing.T) {
	statuses := sampleStatuses()
	statuses[0].Shard = &ShardStatus{Ring: "gopf", Name: "shard-a", Draining: true}
	var b bytes.Buffer
	p, err := NewStatusPrinter(&b, "table", ViewStatus)
	if err != nil {
		t.Fatal(err)
	}
	p.shards = true
	for _, st := range statuses {
		if err := p.Print(st); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := `KIND         NAMESPACE  NAME  SHARD               STATE     HANDLERS                                                           FINALIZERS
KopfExample  default    a     shard-a (draining)  done      done: create_fn; idle: delete_fn                                   gopf.dev/finalizer
KopfExample  -          b     -                   retrying  flaky_fn retrying (retry 1, next at 2026-01-02T03:04:05Z): "boom"  -
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if out := printAll(t, "json", ViewStatus, statuses); !bytes.Contains([]byte(out), []byte(`"shard": {`)) ||
		!bytes.Contains([]byte(out), []byte(`"draining": true`)) {
		t.Errorf("the JSON form lacks the shard:\n%s", out)
	}
}
