package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

// record is one handler's progress as gopf stores it in status.gopf.progress.
type record struct {
	Retries int    `json:"retries"`
	Success bool   `json:"success"`
	Failure bool   `json:"failure"`
	Message string `json:"message"`
	Delayed string `json:"delayed"`
}

// progress decodes status.gopf.progress of obj.
func progress(obj *kopfv1.KopfExample) map[string]record {
	var state struct {
		Progress map[string]record `json:"progress"`
	}
	_ = json.Unmarshal(obj.Status.Extra["gopf"].Raw, &state)
	return state.Progress
}

func TestFailuresAreRecordedAndRetriesCountedUntilTheCauseIsComplete(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "failing"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())

	// While wait_for_config waits for its ConfigMap, the others finish:
	// their outcomes and attempts are in the stored progress.
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		p := progress(obj)
		return p["instant_failure"].Failure && p["eventual_failure"].Failure && p["panicking"].Failure
	})).To(Succeed())
	p := progress(obj)
	g.Expect(p["instant_failure"].Retries).To(Equal(1), "a permanent error is not retried")
	g.Expect(p["instant_failure"].Message).To(ContainSubstring("fail once and for all"))
	g.Expect(p["eventual_failure"].Retries).To(Equal(3), "three attempts in all")
	g.Expect(p["eventual_failure"].Message).To(ContainSubstring(errFlaky.Error()))
	g.Expect(p["panicking"].Retries).To(Equal(1))
	g.Expect(p["panicking"].Message).To(ContainSubstring(`handler "panicking" panicked`), "%s", p["panicking"].Message)
	g.Expect(p["panicking"].Message).To(ContainSubstring("assignment to entry in nil map"))
	g.Expect(p["wait_for_config"].Success || p["wait_for_config"].Failure).To(BeFalse(), "still waiting")
	g.Expect(p["wait_for_config"].Delayed).NotTo(BeEmpty(), "the next attempt is scheduled")
	g.Expect(p["wait_for_config"].Message).To(ContainSubstring("does not exist yet"))
	g.Expect(obj.Status.Extra).NotTo(HaveKey("wait_for_config"))

	// The dependency appears: the last handler succeeds, the cause is
	// complete, and the progress is gone, failures and all.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "failing-config"}, Data: map[string]string{"mode": "fast"}}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		return obj.Status.Extra["wait_for_config"].Raw != nil && progress(obj) == nil
	})).To(Succeed())
	var result struct {
		Retries int
		Config  map[string]string
	}
	g.Expect(json.Unmarshal(obj.Status.Extra["wait_for_config"].Raw, &result)).To(Succeed())
	g.Expect(result.Retries).To(BeNumerically(">=", 1), "it was retried while waiting")
	g.Expect(result.Config).To(Equal(cm.Data))
	var state map[string]any
	g.Expect(json.Unmarshal(obj.Status.Extra["gopf"].Raw, &state)).To(Succeed())
	g.Expect(state).To(HaveKey("lastHandled"))
}
