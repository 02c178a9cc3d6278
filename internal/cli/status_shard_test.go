package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
	"github.com/gopf-dev/gopf/internal/plan"
)

// The status of a sharded operator's objects names each object's shard
// from its labels, and whether it is being drained; the shard is who runs
// the object's timers. The table shows it when given the ring, the json
// form whenever the object is labelled.
func TestTheStatusCommandShowsEachObjectsShard(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("tick"))
	const shardKey, drainKey = "shard.alpha.sharding.timebertt.dev/gopf", "drain.alpha.sharding.timebertt.dev/gopf"
	for name, labels := range map[string]map[string]string{
		"on-a":       {shardKey: "shard-a"},
		"leaving":    {shardKey: "shard-b", drainKey: "true"},
		"unassigned": nil,
	} {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name, Labels: labels}, Spec: kopfv1.KopfExampleSpec{Field: "value"}}
		g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	}

	table := runCommandOf(t, reg, "status", "-n", env.Namespace, "--shard-ring", "gopf")
	t.Logf("status:\n%s", table)
	g.Expect(table).To(MatchRegexp(`^KIND\s+NAMESPACE\s+NAME\s+SHARD\s+STATE\s+HANDLERS\s+FINALIZERS\n`))
	rows := tableRows(t, table)
	g.Expect(rows["on-a"]).To(MatchRegexp(`on-a\s+shard-a\s+idle\s+tick running \(on shard-a\)\s+-$`))
	g.Expect(rows["leaving"]).To(MatchRegexp(`leaving\s+shard-b \(draining\)\s+idle\s+tick running \(on shard-b\)\s+-$`))
	g.Expect(rows["unassigned"]).To(MatchRegexp(`unassigned\s+-\s+idle\s+tick running\s+-$`))
	g.Expect(runCommandOf(t, reg, "status", "-n", env.Namespace)).NotTo(ContainSubstring("SHARD"), "an operator not known to be sharded")

	planned := tableRows(t, runCommandOf(t, reg, "plan", "-n", env.Namespace, "--shard-ring", "gopf"))
	g.Expect(planned["leaving"]).To(MatchRegexp(`shard-b \(draining\)\s+idle\s+hand over to another shard: stop its timers and daemons, remove the shard and drain labels$`))
	g.Expect(planned["on-a"]).To(MatchRegexp(`shard-a\s+idle\s+add finalizer gopf.dev/finalizer; schedule timer tick$`))

	var list struct {
		Items []plan.ObjectStatus `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(runCommandOf(t, reg, "status", "-o", "json", "-n", env.Namespace)), &list)).To(Succeed())
	shards := map[string]*plan.ShardStatus{}
	for _, item := range list.Items {
		shards[item.Name] = item.Shard
	}
	g.Expect(shards).To(Equal(map[string]*plan.ShardStatus{
		"on-a":       {Ring: "gopf", Name: "shard-a"},
		"leaving":    {Ring: "gopf", Name: "shard-b", Draining: true},
		"unassigned": nil,
	}))

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.ControlPlane.WriteKubeconfig(kubeconfig)).To(Succeed())
	var out, errOut bytes.Buffer
	g.Expect(cli.RunKubectlPlugin(env.Ctx, &out, &errOut,
		[]string{"status", "kopfexamples", "-n", env.Namespace, "--shard-ring", "gopf", "--kubeconfig", kubeconfig})).To(Succeed(), errOut.String())
	plugin := tableRows(t, out.String())
	g.Expect(plugin["leaving"]).To(MatchRegexp(`leaving\s+shard-b \(draining\)\s+`), out.String())
	g.Expect(plugin["on-a"]).To(MatchRegexp(`on-a\s+shard-a\s+`), out.String())
}
