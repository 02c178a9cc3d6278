package faults_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

// mergePatch is a JSON merge patch from a JSON text.
func mergePatch(text string) client.Patch {
	return client.RawPatch("application/merge-patch+json", []byte(text))
}

// newConfigMap returns a ConfigMap the scenarios' ConfigMap handlers select.
func newConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"faults": "bad-input"}},
		Data:       data,
	}
}

// configMapHandled reports whether gopf has handled a ConfigMap: state in
// its annotations and nothing unfinished.
func configMapHandled(g Gomega, ns, name string) bool {
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	last := cm.Annotations["gopf.dev/last-handled-configuration"]
	return json.Valid([]byte(last)) && strings.HasPrefix(last, "{") && cm.Annotations["gopf.dev/progress"] == ""
}

func TestBadStoredStateIsReportedAndReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"name": obj.Name}, nil
	}, handlers.ID("create"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("cm_create"), handlers.Labels{"faults": "bad-input"})
	runOperator(t, cfg, ns, reg)

	garbage := map[string]string{ // object → what its state becomes
		"garbage-string":  `{"status":{"gopf":"garbage"}}`,
		"garbage-essence": `{"status":{"gopf":{"lastHandled":"not json"}}}`,
	}
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	for _, name := range sortedKeys(garbage) {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	g.Expect(k8s.Create(ctx, newConfigMap(ns, "garbage-annotation", map[string]string{"v": "1"}))).To(Succeed())
	for _, name := range sortedKeys(garbage) {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue())
		g.Expect(k8s.Status().Patch(ctx, newExample(ns, name), mergePatch(garbage[name]))).To(Succeed())
	}
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, "garbage-annotation") }, timeout).Should(BeTrue())
	g.Expect(k8s.Patch(ctx, newConfigMap(ns, "garbage-annotation", nil), mergePatch(`{"metadata":{"annotations":{"gopf.dev/last-handled-configuration":"{{{"}}}`))).To(Succeed())

	// Each is reported with a Warning Event naming the problem, handled as
	// new (its create handler runs again, as documented), and its state is
	// replaced by good state.
	objects := []client.Object{newConfigMap(ns, "garbage-annotation", nil)}
	for _, name := range sortedKeys(garbage) {
		objects = append(objects, newExample(ns, name))
	}
	for _, obj := range objects {
		g.Eventually(func(g Gomega) []string { return eventNotes(g, obj) }, timeout).Should(ContainElement(And(
			HavePrefix("BadStoredState: "), ContainSubstring("cannot be read"))), obj.GetName())
	}
	for _, name := range sortedKeys(garbage) {
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue(), name)
		g.Expect(calls.of("create", name)).To(HaveLen(2), name)
	}
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, "garbage-annotation") }, timeout).Should(BeTrue())
	g.Expect(calls.of("cm_create", "garbage-annotation")).To(HaveLen(2))
	g.Expect(logs.Find("ignores its stored state", "garbage-essence")).NotTo(BeEmpty())

	// And the operator goes on serving.
	g.Expect(k8s.Create(ctx, newExample(ns, "healthy"))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key("healthy"))) }, timeout).Should(BeTrue())
	record(t, "6a", outcome{Objects: len(garbage) + 2, Outcome: "held", Figures: joinf(
		"each bad state got a BadStoredState Warning Event and a log line, was treated as absent (the create handler ran a 2nd time, as documented) and was replaced",
		"a healthy object created afterwards was handled")})
}

func TestUnreadableProgressRecordsAreReplacedWithoutHarmToOtherObjects(t *testing.T) {
	record(t, "6b", outcome{Objects: 3, Outcome: "held: the bad records are replaced; other objects keep their state",
		Figures: "BadStoredState Event; the rewrite nulls records it could not read; the other KopfExample's change reaches its update handler only; the ConfigMap's annotation is replaced"})
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	for _, reason := range []string{"create", "update"} {
		record := func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
			calls.add(c, "")
			return nil, nil
		}
		recordCM := func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
			calls.add(c, "")
			return nil, nil
		}
		if reason == "create" {
			handlers.OnCreate(reg, record, handlers.ID("create"))
			handlers.OnCreate(reg, recordCM, handlers.ID("cm_create"), handlers.Labels{"faults": "bad-input"})
		} else {
			handlers.OnUpdate(reg, record, handlers.ID("update"))
			handlers.OnUpdate(reg, recordCM, handlers.ID("cm_update"), handlers.Labels{"faults": "bad-input"})
		}
	}
	runOperator(t, cfg, ns, reg)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	for _, name := range []string{"bad-progress", "bystander"} {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue())
	}
	g.Expect(k8s.Create(ctx, newConfigMap(ns, "bad-progress-cm", map[string]string{"v": "1"}))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, "bad-progress-cm") }, timeout).Should(BeTrue())

	g.Expect(k8s.Status().Patch(ctx, newExample(ns, "bad-progress"), mergePatch(`{"status":{"gopf":{"progress":{"create":42}}}}`))).To(Succeed())
	g.Expect(k8s.Patch(ctx, newConfigMap(ns, "bad-progress-cm", nil), mergePatch(`{"metadata":{"annotations":{"gopf.dev/progress":"{\"cm_create\":42}"}}}`))).To(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, newExample(ns, "bad-progress")) }, timeout).Should(ContainElement("BadStoredState"))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, newConfigMap(ns, "bad-progress-cm", nil)) }, timeout).Should(ContainElement("BadStoredState"))

	// The bad records are replaced ...
	g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key("bad-progress"))) }, 10*time.Second).Should(BeTrue())
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, "bad-progress-cm") }, 10*time.Second).Should(BeTrue())
	// ... and the other objects are not affected: a change is an update.
	patchField(g, ns, "bystander", "changed")
	g.Eventually(func() int { return len(calls.of("update", "bystander")) }, 10*time.Second).Should(Equal(1))
	g.Expect(calls.of("create", "bystander")).To(HaveLen(1))
	g.Expect(k8s.Patch(ctx, newConfigMap(ns, "bad-progress-cm", nil), mergePatch(`{"data":{"v":"2"}}`))).To(Succeed())
	g.Eventually(func() int { return len(calls.of("cm_update", "bad-progress-cm")) }, 10*time.Second).Should(Equal(1))
}

func TestStateTooLargeForAnnotationsIsKeptCompactAndDoesNotBlockDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	selected := handlers.Labels{"faults": "bad-input"}
	handlers.OnCreate(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("cm_create"), selected)
	handlers.OnDelete(reg, func(ctx context.Context, obj *corev1.ConfigMap, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return nil, nil
	}, handlers.ID("cm_delete"), selected)
	runOperator(t, cfg, ns, reg)

	// A full copy of the essence would take the annotations over 256 KiB:
	// gopf keeps a digest instead, and handles the object once.
	big := newConfigMap(ns, "big", map[string]string{"blob": strings.Repeat("x", 300*1024)})
	g.Expect(k8s.Create(ctx, big)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return configMapHandled(g, ns, "big") }, timeout).Should(BeTrue())
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), &cm)).To(Succeed())
	last := cm.Annotations["gopf.dev/last-handled-configuration"]
	g.Expect(last).To(HavePrefix(`{"$gopf":{`))
	g.Consistently(func() int { return len(calls.of("cm_create", "big")) }, 3*time.Second).Should(Equal(1))
	g.Expect(eventReasons(g, big)).NotTo(ContainElement("StateTooLarge"))

	// Deleting it works as for any object.
	g.Expect(k8s.Delete(ctx, big)).To(Succeed())
	g.Expect(envtest.WaitGone(ctx, k8s, big)).To(Succeed())
	g.Expect(calls.of("cm_delete", "big")).To(HaveLen(1))
	record(t, "6c", outcome{Objects: 1, Outcome: "held", Figures: joinf(
		fmt.Sprintf("the create handler ran once; the last-handled state is a %d-byte digest (see 6g) instead of a 300 KiB copy", len(last)),
		"no Warning Event needed; the object was deleted normally (its delete handler ran, the finalizer went)")})
}

func TestUnserialisableResultsAndPanicsAreReportedAndOthersServed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	only := func(name string) handlers.CreateOption {
		return handlers.When(func(obj *kopfv1.KopfExample, _ *handlers.Cause) bool { return obj.GetName() == name })
	}
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"channel": make(chan int)}, nil
	}, handlers.ID("returns_channel"), only("channel"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"ratio": math.Inf(1)}, nil
	}, handlers.ID("returns_inf"), only("infinity"))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		panic("boom")
	}, handlers.ID("panics"), only("panic"), handlers.Retries(2), handlers.Backoff(100*time.Millisecond))
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"ok": true}, nil
	}, handlers.ID("healthy"), only("healthy"))
	// Handler errors become Events only when asked for (design rule 6).
	runOperator(t, cfg, ns, reg, func(o *envtest.OperatorOptions) { o.Reconcile.LogEvents = reconcile.LogEventsErrors })
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

	for _, name := range []string{"channel", "infinity", "panic"} {
		g.Expect(k8s.Create(ctx, newExample(ns, name))).To(Succeed())
	}
	for _, name := range []string{"channel", "infinity", "panic"} {
		// A failure is final: the cause is complete, and no result is stored.
		g.Eventually(func(g Gomega) bool { return handled(rawObject(g, key(name))) }, timeout).Should(BeTrue(), name)
	}
	for name, id := range map[string]string{"channel": "returns_channel", "infinity": "returns_inf"} {
		g.Expect(calls.of(id, name)).To(HaveLen(1), "an unserialisable result is a permanent failure")
		g.Expect(field(rawObject(g, key(name)), "status", id)).To(BeNil())
		g.Expect(logs.Find("handler failed permanently", "cannot be stored as JSON", id, name)).NotTo(BeEmpty(), name)
	}
	g.Expect(logs.Find("json: unsupported type: chan int")).NotTo(BeEmpty())
	g.Expect(logs.Find("json: unsupported value: +Inf")).NotTo(BeEmpty())
	g.Expect(calls.of("panics", "panic")).To(HaveLen(2))
	g.Expect(logs.Find("handler panicked", "panic: boom", "panic")).To(HaveLen(2))
	g.Expect(logs.Find("handler failed permanently", "no attempts left after 2 attempts", `"panics" panicked`)).NotTo(BeEmpty())
	g.Eventually(func(g Gomega) []string { return eventNotes(g, newExample(ns, "panic")) }, timeout).Should(ContainElement(And(
		HavePrefix("Logging: "), ContainSubstring("panic: boom"))))

	g.Expect(k8s.Create(ctx, newExample(ns, "healthy"))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return isTrue(field(rawObject(g, key("healthy")), "status", "healthy", "ok")) }, timeout).Should(BeTrue())

	record(t, "6e", outcome{Objects: 2, Outcome: "held", Figures: joinf(
		"each panic recovered, logged with its stack and posted as a Warning Event (LogEvents errors); retried once, then failed permanently as configured",
		"a healthy object created afterwards was handled")})

	t.Run("an Event reports an unserialisable result", func(t *testing.T) {
		record(t, "6d", outcome{Objects: 2, Outcome: "held: a HandlerFailed Warning Event names the handler and the error",
			Figures: "a clear log line and Event (\"json: unsupported type: chan int\" / \"unsupported value: +Inf\"); the cause completes as failed, no result is written; the operator goes on"})
		g := NewWithT(t)
		for _, name := range []string{"channel", "infinity"} {
			g.Eventually(func(g Gomega) []string { return eventNotes(g, newExample(ns, name)) }, 5*time.Second).
				Should(ContainElement(ContainSubstring("cannot be stored as JSON")), name)
		}
	})
}

func TestAdmissionRequestsThatAreNotJSONGetAClearAnswer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	var calls callLog
	reg := handlers.NewRegistry()
	selected := handlers.Labels{"faults": "webhook-" + ns}
	handlers.OnValidate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, a *handlers.Admission[*kopfv1.KopfExample]) error {
		if obj.Spec.Field == "forbidden" {
			return handlers.Deny(http.StatusUnprocessableEntity, "spec.field must not be forbidden")
		}
		return nil
	}, handlers.ID("check"), selected)
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		calls.add(c, "")
		return map[string]any{"ok": true}, nil
	}, handlers.ID("create"), selected)
	op := runOperator(t, cfg, ns, reg, func(o *envtest.OperatorOptions) {
		o.Webhook = &webhook.Options{Name: ns + ".faults.gopf.dev", CertDir: t.TempDir()}
	})
	srv := op.Manager.GetWebhookServer().(*webhook.Server)
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(srv.CABundle())).To(BeTrue())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	url := strings.TrimSuffix(srv.Options().URL, "/") + "/validate/kopf.dev/v1/kopfexample"

	review := func(body string) *admissionv1.AdmissionResponse {
		var resp *http.Response
		g.Eventually(func() error {
			var err error
			resp, err = hc.Post(url, "application/json", bytes.NewBufferString(body))
			return err
		}, timeout).Should(Succeed(), "the webhook server answers")
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "admission errors travel inside the review: %s", data)
		var out admissionv1.AdmissionReview
		g.Expect(json.Unmarshal(data, &out)).To(Succeed())
		g.Expect(out.Response).NotTo(BeNil())
		return out.Response
	}
	garbage := review("this is not JSON {")
	g.Expect(garbage.Allowed).To(BeFalse())
	g.Expect(garbage.Result.Code).To(BeNumerically("==", http.StatusBadRequest))
	g.Expect(garbage.Result.Message).NotTo(BeEmpty())

	notAnObject := review(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"42",` +
		`"kind":{"group":"kopf.dev","version":"v1","kind":"KopfExample"},"resource":{"group":"kopf.dev","version":"v1","resource":"kopfexamples"},` +
		`"name":"x","namespace":"` + ns + `","operation":"CREATE","userInfo":{},"object":[1,2,3]}}`)
	g.Expect(notAnObject.Allowed).To(BeFalse())
	g.Expect(string(notAnObject.UID)).To(Equal("42"))
	g.Expect(notAnObject.Result.Message).To(And(ContainSubstring(`"check"`), ContainSubstring("decoding the object")))

	// The server goes on serving real requests, through the API server.
	bad := newExample(ns, "forbidden")
	bad.Labels = map[string]string{"faults": "webhook-" + ns}
	bad.Spec.Field = "forbidden"
	g.Eventually(func() error { return k8s.Create(ctx, bad) }, timeout).Should(MatchError(ContainSubstring("spec.field must not be forbidden")))
	good := newExample(ns, "allowed")
	good.Labels = bad.Labels
	g.Expect(k8s.Create(ctx, good)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		return isTrue(field(rawObject(g, client.ObjectKeyFromObject(good)), "status", "create", "ok"))
	}, timeout).Should(BeTrue())
	record(t, "6f", outcome{Objects: 2, Outcome: "held", Figures: joinf(
		fmt.Sprintf("garbage: denied with code %d (%q...)", garbage.Result.Code, garbage.Result.Message[:min(len(garbage.Result.Message), 50)]),
		fmt.Sprintf("an array as the object: denied with code %d naming the handler", notAnObject.Result.Code),
		"afterwards the API server's own requests were still answered: one denied by the handler, one admitted and handled")})
}
