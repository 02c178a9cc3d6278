package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
)

func TestMain(m *testing.M) {
	envtest.MainWith(m, envtest.MainOptions{CheckGoroutines: true})
}

// writeKubeconfig writes a kubeconfig for the control plane, as kubectl
// users have one, and returns its path.
func writeKubeconfig(t *testing.T, env *envtest.Env) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.ControlPlane.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

const timeout = 60 * time.Second

// configMapOperator handles ConfigMaps, whose state gopf keeps in
// annotations (ConfigMaps have no status): ok_fn succeeds, flaky_fn fails
// for an hour on ConfigMaps labelled flaky, bad_fn fails for good on those
// labelled bad, cleanup_fn holds every ConfigMap with gopf's finalizer.
func configMapOperator() *handlers.Registry {
	reg := handlers.NewRegistry()
	labelled := func(label string) func(*corev1.ConfigMap, *handlers.Cause) bool {
		return func(_ *corev1.ConfigMap, c *handlers.Cause) bool { return c.Labels[label] == "yes" }
	}
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("ok_fn"))
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return nil, handlers.Temporary(errors.New("upstream is down"), time.Hour)
	}, handlers.ID("flaky_fn"), handlers.When(labelled("flaky")))
	handlers.OnCreate(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return nil, handlers.Permanent(errors.New("cannot work with this"))
	}, handlers.ID("bad_fn"), handlers.When(labelled("bad")))
	handlers.OnDelete(reg, func(ctx context.Context, cm *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("cleanup_fn"))
	return reg
}

// plugin runs `kubectl gopf` with args and a kubeconfig.
func plugin(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := gopf.RunKubectlPlugin(context.Background(), &out, &errOut, append(args, "--kubeconfig", kubeconfig)); err != nil {
		t.Fatalf("kubectl gopf %v: %v (stderr: %s)", args, err, errOut.String())
	}
	return out.String()
}

func TestThePluginShowsWhatAnUnknownOperatorStoredThroughAKubeconfig(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, nil)
	op := env.Start(configMapOperator(), envtest.OperatorOptions{})
	for name, labels := range map[string]map[string]string{
		"done": nil, "retrying": {"flaky": "yes"}, "failed": {"flaky": "yes", "bad": "yes"}, "deleting": nil, "gave-up": {"bad": "yes"},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name, Labels: labels}}
		g.Expect(env.Client.Create(env.Ctx, cm)).To(Succeed())
	}
	annotations := func(name string) func(g Gomega) map[string]string {
		return func(g Gomega) map[string]string {
			cm := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(env.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, cm)).To(Succeed())
			return cm.Annotations
		}
	}
	g.Eventually(annotations("done"), timeout).Should(HaveKey("gopf.dev/last-handled-configuration"))
	g.Eventually(annotations("deleting"), timeout).Should(HaveKey("gopf.dev/last-handled-configuration"))
	g.Eventually(annotations("gave-up"), timeout).Should(HaveKey("gopf.dev/last-handled-configuration"))
	g.Eventually(func(g Gomega) []corev1.Event {
		events := &corev1.EventList{}
		g.Expect(env.Client.List(env.Ctx, events, client.InNamespace(env.Namespace),
			client.MatchingFields{"reason": "HandlerFailed", "involvedObject.name": "gave-up"})).To(Succeed())
		return events.Items
	}, timeout).ShouldNot(BeEmpty())
	g.Eventually(annotations("retrying"), timeout).Should(HaveKeyWithValue("gopf.dev/progress", ContainSubstring(`"delayed"`)))
	g.Eventually(annotations("failed"), timeout).Should(
		HaveKeyWithValue("gopf.dev/progress", And(ContainSubstring(`"failure":true`), ContainSubstring(`"delayed"`))))
	g.Expect(op.Stop()).To(Succeed())
	g.Expect(env.Client.Delete(env.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "deleting"}})).To(Succeed())

	kubeconfig := writeKubeconfig(t, env)
	table := plugin(t, kubeconfig, "status", "configmaps", "-n", env.Namespace)
	t.Logf("kubectl gopf status:\n%s", table)
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		rows[strings.Fields(line)[2]] = line
	}
	g.Expect(rows).To(HaveLen(5))
	g.Expect(rows["gave-up"]).To(MatchRegexp(`failed\s+bad_fn failed \(at \S+Z\): "permanent error: cannot work with this"\s+gopf.dev/finalizer$`))
	g.Expect(rows["done"]).To(MatchRegexp(`ConfigMap\s+\S+\s+done\s+done\s+-\s+gopf.dev/finalizer$`))
	g.Expect(rows["retrying"]).To(MatchRegexp(`retrying\s+flaky_fn retrying \(retry 1, next at \S+Z\): "temporary error \(retry in 1h0m0s\): upstream is down"; done: ok_fn\s+gopf.dev/finalizer$`))
	g.Expect(rows["failed"]).To(MatchRegexp(`failed\s+.*bad_fn failed: "permanent error: cannot work with this"`))
	g.Expect(rows["deleting"]).To(MatchRegexp(`deleting\s+-\s+gopf.dev/finalizer$`))

	// The fields of `status -o json` this test reads, as a user's script
	// would declare them.
	type handlerStatus struct {
		ID          string     `json:"id"`
		State       string     `json:"state"`
		Attempts    int        `json:"attempts"`
		NextAttempt *time.Time `json:"nextAttempt"`
		Message     string     `json:"message"`
	}
	type finalizerStatus struct {
		Name  string `json:"name"`
		Owner string `json:"owner"`
		Why   string `json:"why"`
	}
	var list struct {
		Items []struct {
			State       string            `json:"state"`
			StateSource string            `json:"stateSource"`
			OnStart     []any             `json:"onStart"`
			Handlers    []handlerStatus   `json:"handlers"`
			Finalizers  []finalizerStatus `json:"finalizers"`
		} `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(plugin(t, kubeconfig, "status", "cm", "retrying", "-o", "json", "-n", env.Namespace)), &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	st := list.Items[0]
	g.Expect(st.StateSource).To(Equal("annotations gopf.dev/*"))
	g.Expect(st.State).To(Equal("retrying"))
	g.Expect(st.OnStart).To(BeEmpty(), "without the handlers there is no plan")
	g.Expect(st.Handlers).To(ContainElement(And(
		HaveField("ID", "flaky_fn"), HaveField("State", "retrying"), HaveField("Attempts", 1),
		HaveField("NextAttempt", Not(BeNil())), HaveField("Message", ContainSubstring("upstream is down")),
	)))
	g.Expect(st.Finalizers).To(Equal([]finalizerStatus{{Name: "gopf.dev/finalizer", Owner: "gopf", Why: "gopf's: held while delete handlers, timers or daemons of the operator need the object"}}))
}

func TestThePluginNamesWhatItDoesNotKnow(t *testing.T) {
	kubeconfig := writeKubeconfig(t, envtest.New(t, nil))
	var out, errOut bytes.Buffer
	err := gopf.RunKubectlPlugin(context.Background(), &out, &errOut, []string{"status", "nosuchthings", "--kubeconfig", kubeconfig})
	if err == nil || !strings.Contains(err.Error(), `no kind called "nosuchthings"`) {
		t.Errorf("unknown kind: got %v", err)
	}
	err = gopf.RunKubectlPlugin(context.Background(), &out, &errOut, []string{"describe"})
	if err == nil || !strings.Contains(err.Error(), `unknown command "describe"`) {
		t.Errorf("unknown command: got %v", err)
	}
}
