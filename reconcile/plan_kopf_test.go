package reconcile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/plan"
)

// kopfStateFiles are the objects of internal/engine/testdata/kopf-state.
var kopfStateFiles = []string{
	"kopfexample-created.yaml", "kopfexample-updated.yaml", "kopfexample-flaky.yaml", "kopfexample-deleting.yaml", "configmap-captured.yaml",
}

// planKopfState recreates the objects of internal/engine/testdata/kopf-state in a namespace
// of their own and returns the planner of the operator of Kopf's handlers.
// It counts the planner's requests.
func planKopfState(t *testing.T) (*plan.Planner, string, *envtest.RequestCounter) {
	t.Helper()
	ns := newNamespace(t)
	for _, file := range kopfStateFiles {
		recreateAsKopfLeftIt(t, ns, file)
	}
	counted, requests := rest.CopyConfig(cfg), &envtest.RequestCounter{}
	requests.Wrap(counted)
	planner, err := plan.NewPlanner(counted, scheme, kopfHandlers(&envtest.Calls{}, nil), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return planner, ns, requests
}

// printed prints the planner's table of ns and maps the NAME column to its line.
func printed(t *testing.T, planner *plan.Planner, ns string, view plan.View) map[string]string {
	t.Helper()
	var out bytes.Buffer
	if _, err := planner.Print(context.Background(), &out, plan.Selection{Namespace: ns}, "table", view); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		rows[strings.Fields(line)[2]] = line
	}
	return rows
}

func TestThePlanOfObjectsKopfLeftContinuesWhereKopfStopped(t *testing.T) {
	g := NewWithT(t)
	planner, ns, requests := planKopfState(t)

	rows := printed(t, planner, ns, plan.ViewPlan)
	g.Expect(rows).To(HaveLen(5))
	g.Expect(rows["created"]).To(MatchRegexp(`done\s+nothing: every handler is done$`))
	g.Expect(rows["updated"]).To(MatchRegexp(`done\s+nothing: every handler is done$`))
	g.Expect(rows["captured"]).To(MatchRegexp(`ConfigMap\s+\S+\s+captured\s+done\s+nothing: every handler is done$`))
	g.Expect(rows["flaky"]).To(MatchRegexp(`retrying\s+continue flaky_fn \(retry 1\)$`), "Kopf's delay is over")
	g.Expect(rows["deleting"]).To(MatchRegexp(`deleting\s+continue delete_fn \(retry 1\); release Kopf's finalizer kopf.zalando.org/KopfFinalizerMarker once they are done$`))
	g.Expect(requests.Writes("")).To(BeZero(), "the planner wrote: %v", requests.Snapshot())
}

func TestTheStatusOfAnObjectKopfHandledSaysItsStateIsKopfs(t *testing.T) {
	g := NewWithT(t)
	planner, ns, requests := planKopfState(t)

	rows := printed(t, planner, ns, plan.ViewStatus)
	g.Expect(rows["created"]).To(MatchRegexp(`done\s+done: create_fn,update_fn,field_fn/spec.field; idle: delete_fn\s+kopf.zalando.org/KopfFinalizerMarker$`))

	byName := map[string]*plan.ObjectStatus{}
	g.Expect(planner.Plan(context.Background(), plan.Selection{Namespace: ns}, func(st *plan.ObjectStatus) error {
		byName[st.Name] = st
		return nil
	})).To(Succeed())
	g.Expect(byName).To(HaveLen(len(kopfStateFiles)))
	for name, st := range byName {
		g.Expect(st.StateSource).To(Equal("annotations kopf.zalando.org/* (Kopf's format)"), name)
		g.Expect(st.Handled).To(Equal(name != "flaky"), "%s: the creation of flaky is not done", name)
	}
	created := byName["created"]
	g.Expect(created.State).To(Equal("done"))
	g.Expect(created.Finalizers).To(Equal([]plan.FinalizerStatus{{Name: "kopf.zalando.org/KopfFinalizerMarker", Owner: "kopf",
		Why: "Kopf's, which gopf answers for as for its own: held for delete handler delete_fn"}}))
	flaky := byName["flaky"].Handlers
	g.Expect(flaky).To(ContainElement(And(HaveField("ID", "flaky_fn"), HaveField("State", plan.HandlerRetrying), HaveField("Attempts", 1))))
	g.Expect(rows["flaky"]).To(MatchRegexp(`retrying\s+flaky_fn retrying \(retry 1, due now\): "not yet"; done: create_fn,field_fn/spec.field; idle: update_fn,delete_fn\s+kopf.zalando.org/KopfFinalizerMarker$`))
	deleting := byName["deleting"]
	g.Expect(deleting.Deleting).NotTo(BeNil())
	g.Expect(deleting.Finalizers).To(ConsistOf(HaveField("Owner", "kopf")))
	g.Expect(requests.Writes("")).To(BeZero(), "the planner wrote: %v", requests.Snapshot())
}
