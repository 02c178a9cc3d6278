package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/cli"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/plan"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	envtest.MainWith(m, envtest.MainOptions{
		ControlPlane: envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}},
		BeforeTests: func(cp *envtest.ControlPlane) error {
			cfg = cp.Config
			return nil
		},
	})
}

const timeout = 60 * time.Second

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

// statusRegistry has a handler for each state the status command shows:
// create_fn succeeds, flaky_fn (on objects labelled flaky) fails for an
// hour, bad_fn (on objects labelled bad) fails permanently, delete_fn holds
// every object with gopf's finalizer.
func statusRegistry() *handlers.Registry {
	reg := handlers.NewRegistry()
	labelled := func(label string) func(*kopfv1.KopfExample, *handlers.Cause) bool {
		return func(_ *kopfv1.KopfExample, c *handlers.Cause) bool { return c.Labels[label] == "yes" }
	}
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"message": "created"}, nil
	}, handlers.ID("create_fn"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Temporary(errors.New("the database is not ready"), time.Hour)
	}, handlers.ID("flaky_fn"), handlers.Retries(5), handlers.When(labelled("flaky")))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, handlers.Permanent(errors.New("the spec makes no sense"))
	}, handlers.ID("bad_fn"), handlers.When(labelled("bad")))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("delete_fn"))
	return reg
}

// statusFixture leaves, in a namespace of its own, one object in each
// state as an operator of statusRegistry leaves them, and stops the
// operator: "done" (handled), "gave-up" (handled, bad_fn failed for good),
// "retrying" (flaky_fn waits an hour),
// "failed" (bad_fn failed for good while flaky_fn retries) and "deleting"
// (handled, then deleted while no operator runs, so gopf's finalizer holds
// it with delete_fn to run); and "new-one", created once the operator is
// gone.
func statusFixture(t *testing.T) *envtest.Env {
	t.Helper()
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	op := env.Start(statusRegistry(), envtest.OperatorOptions{})
	objects := map[string]map[string]string{
		"done":     nil,
		"retrying": {"flaky": "yes"},
		"failed":   {"flaky": "yes", "bad": "yes"},
		"deleting": nil,
		"gave-up":  {"bad": "yes"},
	}
	for name, labels := range objects {
		obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name, Labels: labels}, Spec: kopfv1.KopfExampleSpec{Field: "value"}}
		g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	}
	stored := func(name string) func(g Gomega) string {
		return func(g Gomega) string {
			obj := &kopfv1.KopfExample{}
			g.Expect(env.Client.Get(env.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, obj)).To(Succeed())
			data, err := json.Marshal(obj)
			g.Expect(err).NotTo(HaveOccurred())
			return string(data)
		}
	}
	g.Eventually(stored("done"), timeout).Should(ContainSubstring(`"lastHandled"`))
	g.Eventually(stored("deleting"), timeout).Should(ContainSubstring(`"lastHandled"`))
	g.Eventually(stored("gave-up"), timeout).Should(ContainSubstring(`"lastHandled"`))
	// Its HandlerFailed Event is what remains of bad_fn's failure.
	g.Eventually(func(g Gomega) []corev1.Event {
		events := &corev1.EventList{}
		g.Expect(env.Client.List(env.Ctx, events, client.InNamespace(env.Namespace),
			client.MatchingFields{"reason": "HandlerFailed", "involvedObject.name": "gave-up"})).To(Succeed())
		return events.Items
	}, timeout).ShouldNot(BeEmpty())
	g.Eventually(stored("retrying"), timeout).Should(ContainSubstring(`"delayed"`))
	g.Eventually(stored("failed"), timeout).Should(And(ContainSubstring(`"failure":true`), ContainSubstring(`"delayed"`)))
	g.Expect(op.Stop()).To(Succeed())
	deleting := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "deleting"}}
	g.Expect(env.Client.Delete(env.Ctx, deleting)).To(Succeed())
	created := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "new-one"}, Spec: kopfv1.KopfExampleSpec{Field: "value"}}
	g.Expect(env.Client.Create(env.Ctx, created)).To(Succeed())
	return env
}

// runCommand runs a command of an operator made of statusRegistry and
// returns what it printed.
func runCommand(t *testing.T, command string, args ...string) string {
	t.Helper()
	return runCommandOf(t, statusRegistry(), command, args...)
}

// runCommandOf runs a command of an operator made of reg.
func runCommandOf(t *testing.T, reg *handlers.Registry, command string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	program := cli.Program{Name: "operator", Registry: reg, AddToScheme: []func(*runtime.Scheme) error{kopfv1.AddToScheme}}
	err := cli.StatusCommand(context.Background(), &out, &errOut, cfg, program, command, args)
	if err != nil {
		t.Fatalf("%s %v: %v (stderr: %s)", command, args, err, errOut.String())
	}
	return out.String()
}

// tableRows maps the NAME column of a table to its line.
func tableRows(t *testing.T, table string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	rows := map[string]string{}
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		rows[fields[2]] = line
	}
	return rows
}

func TestTheStatusCommandShowsEachObjectsHandlersAndFinalizers(t *testing.T) {
	g := NewWithT(t)
	env := statusFixture(t)

	table := runCommand(t, "status", "kopfexamples", "-n", env.Namespace)
	t.Logf("status:\n%s", table)
	g.Expect(strings.Fields(strings.SplitN(table, "\n", 2)[0])).To(Equal([]string{"KIND", "NAMESPACE", "NAME", "STATE", "HANDLERS", "FINALIZERS"}))
	rows := tableRows(t, table)
	g.Expect(rows).To(HaveLen(6))
	g.Expect(rows["gave-up"]).To(MatchRegexp(`failed\s+bad_fn failed \(at \S+Z\): "permanent error: the spec makes no sense"; done: create_fn; idle: delete_fn\s+gopf.dev/finalizer$`))
	g.Expect(rows["new-one"]).To(MatchRegexp(`pending\s+create_fn pending; idle: delete_fn\s+-$`))
	g.Expect(rows["done"]).To(MatchRegexp(`KopfExample\s+\S+\s+done\s+done\s+done: create_fn; idle: delete_fn\s+gopf.dev/finalizer$`))
	g.Expect(rows["retrying"]).To(MatchRegexp(`retrying\s+flaky_fn retrying \(retry 1 of 4, next at \S+Z\): "temporary error \(retry in 1h0m0s\): the database is not ready"; done: create_fn; idle: delete_fn\s+gopf.dev/finalizer$`))
	g.Expect(rows["failed"]).To(MatchRegexp(`failed\s+flaky_fn retrying .*; bad_fn failed: "permanent error: the spec makes no sense"; done: create_fn`))
	g.Expect(rows["deleting"]).To(MatchRegexp(`deleting\s+delete_fn pending; done: create_fn\s+gopf.dev/finalizer$`))

	var list struct {
		APIVersion string              `json:"apiVersion"`
		Kind       string              `json:"kind"`
		Items      []plan.ObjectStatus `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(runCommand(t, "status", "-o", "json", "-n", env.Namespace)), &list)).To(Succeed())
	g.Expect(list.APIVersion).To(Equal(plan.StatusAPIVersion))
	g.Expect(list.Kind).To(Equal("ObjectStatusList"))
	byName := map[string]plan.ObjectStatus{}
	for _, item := range list.Items {
		byName[item.Name] = item
	}
	g.Expect(byName).To(HaveLen(6))
	gaveUp := byName["gave-up"]
	g.Expect(gaveUp.Handled).To(BeTrue())
	g.Expect(gaveUp.Failures).To(HaveLen(1))
	g.Expect(gaveUp.Failures[0].Handler).To(Equal("bad_fn"))
	g.Expect(handlerNamed(g, gaveUp, "bad_fn").State).To(Equal(plan.HandlerFailed))

	retrying := byName["retrying"]
	g.Expect(retrying.State).To(Equal("retrying"))
	g.Expect(retrying.StateSource).To(Equal("status.gopf"))
	g.Expect(retrying.Handled).To(BeFalse())
	flaky := handlerNamed(g, retrying, "flaky_fn")
	g.Expect(flaky.State).To(Equal(plan.HandlerRetrying))
	g.Expect(flaky.Attempts).To(Equal(1))
	g.Expect(flaky.MaxAttempts).To(Equal(5))
	g.Expect(flaky.Message).To(ContainSubstring("the database is not ready"))
	g.Expect(flaky.NextAttempt).NotTo(BeNil())
	g.Expect(flaky.NextAttempt.After(*flaky.Started)).To(BeTrue())
	g.Expect(handlerNamed(g, retrying, "create_fn").State).To(Equal(plan.HandlerDone))

	failed := byName["failed"]
	g.Expect(failed.State).To(Equal("failed"))
	bad := handlerNamed(g, failed, "bad_fn")
	g.Expect(bad.State).To(Equal(plan.HandlerFailed))
	g.Expect(bad.Message).To(ContainSubstring("the spec makes no sense"))

	done := byName["done"]
	g.Expect(done.State).To(Equal("done"))
	g.Expect(done.Handled).To(BeTrue())
	g.Expect(done.StateWritten).NotTo(BeNil())
	g.Expect(handlerNamed(g, done, "create_fn").State).To(Equal(plan.HandlerDone))
	g.Expect(done.Finalizers).To(Equal([]plan.FinalizerStatus{{Name: "gopf.dev/finalizer", Owner: "gopf", Why: "gopf's: held for delete handler delete_fn"}}))

	deleting := byName["deleting"]
	g.Expect(deleting.State).To(Equal("deleting"))
	g.Expect(deleting.Deleting).NotTo(BeNil())
	g.Expect(handlerNamed(g, deleting, "delete_fn").State).To(Equal(plan.HandlerPending))
	g.Expect(deleting.Finalizers).To(HaveLen(1))
	g.Expect(deleting.Finalizers[0].Owner).To(Equal("gopf"))
}

func TestThePlanCommandSaysWhatAStartWouldDoAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	env := statusFixture(t)
	before := &kopfv1.KopfExampleList{}
	g.Expect(env.Client.List(env.Ctx, before, client.InNamespace(env.Namespace))).To(Succeed())

	table := runCommand(t, "plan", "-n", env.Namespace)
	t.Logf("plan:\n%s", table)
	g.Expect(strings.Fields(strings.SplitN(table, "\n", 2)[0])).To(Equal([]string{"KIND", "NAMESPACE", "NAME", "STATE", "ON", "START"}))
	rows := tableRows(t, table)
	g.Expect(rows["done"]).To(MatchRegexp(`done\s+nothing: every handler is done$`))
	g.Expect(rows["new-one"]).To(MatchRegexp(`pending\s+add finalizer gopf.dev/finalizer; call create_fn$`))
	g.Expect(rows["retrying"]).To(MatchRegexp(`retrying\s+continue flaky_fn \(retry 1, due at \S+Z\)$`))
	g.Expect(rows["failed"]).To(MatchRegexp(`failed\s+continue flaky_fn \(retry 1, due at \S+Z\)$`))
	g.Expect(rows["deleting"]).To(MatchRegexp(`deleting\s+run delete handler delete_fn; release finalizer gopf.dev/finalizer once they are done$`))

	var list struct {
		Items []plan.ObjectStatus `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(runCommand(t, "plan", "kopfexample", "retrying", "-o", "json", "-n", env.Namespace)), &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].OnStart).To(HaveLen(1))
	g.Expect(list.Items[0].OnStart[0].Do).To(Equal(plan.ActionContinue))
	g.Expect(list.Items[0].OnStart[0].Handler).To(Equal("flaky_fn"))
	g.Expect(list.Items[0].OnStart[0].Retry).To(Equal(1))
	g.Expect(list.Items[0].OnStart[0].Due).NotTo(BeNil())

	after := &kopfv1.KopfExampleList{}
	g.Expect(env.Client.List(env.Ctx, after, client.InNamespace(env.Namespace))).To(Succeed())
	g.Expect(resourceVersions(after)).To(Equal(resourceVersions(before)), "the plan command wrote to an object")
}

func TestTheStatusCommandStreamsPageByPage(t *testing.T) {
	g := NewWithT(t)
	env := statusFixture(t)
	// One object per page: every object is listed, none twice.
	out := runCommand(t, "status", "-o", "yaml", "--chunk-size", "1", "-n", env.Namespace)
	g.Expect(out).To(HavePrefix("apiVersion: " + plan.StatusAPIVersion + "\nkind: ObjectStatusList\nitems:\n"))
	g.Expect(strings.Count(out, "\n- apiVersion: kopf.dev/v1\n")).To(Equal(6))
}

func TestThePlannerEmitsEachPageBeforeListingTheNextAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	env := statusFixture(t)
	counted := rest.CopyConfig(cfg)
	requests := &envtest.RequestCounter{}
	requests.Wrap(counted)
	planner, err := plan.NewPlanner(counted, scheme, statusRegistry(), engine.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	var listedBefore []int
	err = planner.Plan(env.Ctx, plan.Selection{Namespace: env.Namespace, PageSize: 2}, func(*plan.ObjectStatus) error {
		listedBefore = append(listedBefore, requests.Count("GET", "kopfexamples"))
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	// Six objects, two per page: each pair is emitted once its page is in.
	g.Expect(listedBefore).To(Equal([]int{1, 1, 2, 2, 3, 3}))
	g.Expect(requests.Writes("")).To(BeZero(), "the planner wrote: %v", requests.Snapshot())
}

func TestTheStatusCommandRefusesAKindTheOperatorDoesNotHave(t *testing.T) {
	var out, errOut bytes.Buffer
	err := cli.StatusCommand(context.Background(), &out, &errOut, cfg, cli.Program{Name: "operator", Registry: statusRegistry(), AddToScheme: []func(*runtime.Scheme) error{kopfv1.AddToScheme}}, "status", []string{"pods"})
	if err == nil || !strings.Contains(err.Error(), `no kind called "pods" (its kinds: kopfexamples.kopf.dev)`) {
		t.Fatalf("got %v, want an error naming the operator's kinds", err)
	}
}

func TestTheStatusCommandNamesTheOperatorThatRunsTimersFromThePeering(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	reg := handlers.NewRegistry()
	handlers.OnTimer(reg, time.Hour, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("tick"))
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "timed"}, Spec: kopfv1.KopfExampleSpec{Field: "value"}}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())
	// op-b works: op-a has a lower priority, op-c's entry expired long ago.
	now := time.Now().UTC()
	peering := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
		"metadata": map[string]any{"name": env.Namespace},
		"status": map[string]any{
			"op-a": map[string]any{"priority": 10, "lifetime": 600, "lastseen": now.Format(time.RFC3339)},
			"op-b": map[string]any{"priority": 20, "lifetime": 600, "lastseen": now.Format(time.RFC3339)},
			"op-c": map[string]any{"priority": 99, "lifetime": 60, "lastseen": now.Add(-2 * time.Hour).Format(time.RFC3339)},
		},
	}}
	g.Expect(env.Client.Create(env.Ctx, peering)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), peering) })

	table := runCommandOf(t, reg, "status", "-n", env.Namespace, "--peering", env.Namespace)
	g.Expect(tableRows(t, table)["timed"]).To(MatchRegexp(`tick running \(on op-b\)\s+-$`), table)
	planned := runCommandOf(t, reg, "plan", "-n", env.Namespace)
	g.Expect(tableRows(t, planned)["timed"]).To(MatchRegexp(`add finalizer gopf.dev/finalizer; schedule timer tick$`), planned)
}

func handlerNamed(g Gomega, st plan.ObjectStatus, id string) plan.HandlerStatus {
	for _, h := range st.Handlers {
		if h.ID == id {
			return h
		}
	}
	g.Expect(st.Handlers).To(ContainElement(HaveField("ID", id)))
	return plan.HandlerStatus{}
}

func resourceVersions(list *kopfv1.KopfExampleList) map[string]string {
	out := map[string]string{}
	for _, obj := range list.Items {
		out[obj.Name] = obj.ResourceVersion
	}
	return out
}

func TestTheStatusCommandSaysAnObjectKopfHandledHasKopfsState(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	// As Kopf left it: see internal/engine/testdata/kopf-state/kopfexample-created.yaml.
	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "created",
			Annotations: map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"a","items":["x"]}}` + "\n"},
			Finalizers:  []string{"kopf.zalando.org/KopfFinalizerMarker"}},
		Spec: kopfv1.KopfExampleSpec{Field: "a", Items: []string{"x"}},
	}
	g.Expect(env.Client.Create(env.Ctx, obj)).To(Succeed())

	table := runCommand(t, "status", "-n", env.Namespace)
	g.Expect(tableRows(t, table)["created"]).To(MatchRegexp(`done\s+done: create_fn; idle: delete_fn\s+kopf.zalando.org/KopfFinalizerMarker$`), table)
	planned := runCommand(t, "plan", "-n", env.Namespace)
	g.Expect(tableRows(t, planned)["created"]).To(MatchRegexp(`done\s+nothing: every handler is done$`), planned)

	var list struct {
		Items []plan.ObjectStatus `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(runCommand(t, "status", "-o", "json", "-n", env.Namespace)), &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	st := list.Items[0]
	g.Expect(st.StateSource).To(Equal("annotations kopf.zalando.org/* (Kopf's format)"))
	g.Expect(st.Handled).To(BeTrue())
	g.Expect(st.Finalizers).To(Equal([]plan.FinalizerStatus{{Name: "kopf.zalando.org/KopfFinalizerMarker", Owner: "kopf",
		Why: "Kopf's, which gopf answers for as for its own: held for delete handler delete_fn"}}))
}
