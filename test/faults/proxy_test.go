package faults_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/gopf-dev/gopf/test/faults"
)

// get sends one plain GET through the proxy and returns the status code
// and Retry-After header.
func get(g Gomega, px *faults.Proxy, path string) (int, string) {
	resp, err := http.Get(px.URL() + path)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

func TestProxyFailsTheChosenFractionTheSameWayForTheSameSeed(t *testing.T) {
	g := NewWithT(t)
	faultsOf := func(seed uint64) []int {
		px := newProxy(t, seed)
		px.SetFaults(faults.Faults{Fraction: 0.3, Statuses: []int{429, 500, 409}, RetryAfter: 1500 * time.Millisecond})
		var out []int
		for range 100 {
			code, retryAfter := get(g, px, "/api/v1/namespaces/default")
			switch code {
			case http.StatusOK:
			case http.StatusTooManyRequests:
				g.Expect(retryAfter).To(Equal("2"), "Retry-After is rounded up to whole seconds")
			default:
				g.Expect(retryAfter).To(BeEmpty(), "5xx carry Retry-After only when asked to")
			}
			out = append(out, code)
		}
		return out
	}
	first, again, other := faultsOf(7), faultsOf(7), faultsOf(8)
	g.Expect(again).To(Equal(first))
	g.Expect(other).NotTo(Equal(first))
	failed := 0
	for _, code := range first {
		if code != http.StatusOK {
			failed++
		}
	}
	g.Expect(failed).To(BeNumerically("~", 30, 15))
}

func TestProxyAnswersInjectedFailuresAsTheAPIServerWould(t *testing.T) {
	g := NewWithT(t)
	px := newProxy(t, 1)
	c := throughProxy(px, -1, 0)
	cs, err := kubernetes.NewForConfig(c)
	g.Expect(err).NotTo(HaveOccurred())
	px.SetFaults(faults.Faults{Fraction: 1, Statuses: []int{http.StatusConflict}})
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)

	notGet := func(r *http.Request) bool { return r.Method != http.MethodGet }
	px.SetFaults(faults.Faults{Fraction: 1, Statuses: []int{http.StatusInternalServerError}, Match: notGet})
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "Match limits the faults to the requests it accepts")
	_, err = cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "proxy-"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsInternalError(err)).To(BeTrue(), "got %v", err)

	px.SetFaults(faults.Faults{Delay: 300 * time.Millisecond})
	began := time.Now()
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Since(began)).To(BeNumerically(">=", 300*time.Millisecond))

	injected := 0
	for _, r := range px.Requests() {
		if r.Injected {
			injected++
		}
	}
	g.Expect(injected).To(Equal(2))
}

func TestProxyLosesTheResponsesOfWritesItForwarded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	px := newProxy(t, 1)
	cs, err := kubernetes.NewForConfig(throughProxy(px, -1, 0))
	g.Expect(err).NotTo(HaveOccurred())
	ns := newNamespace(t)
	writes := func(r *http.Request) bool { return r.Method != http.MethodGet }
	for _, loss := range []faults.Loss{faults.LossReset, faults.Loss502} {
		px.SetFaults(faults.Faults{LoseFraction: 1, Loss: loss, Match: writes})
		name := "lost-" + string(loss)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		g.Expect(err).To(HaveOccurred(), "the client does not get the answer (%s)", loss)
		// The write landed all the same, and reads are not affected.
		_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), string(loss))
	}
	var lost []int
	for _, r := range px.Requests() {
		if r.Lost {
			lost = append(lost, r.Status)
		}
	}
	g.Expect(lost).To(Equal([]int{http.StatusCreated, http.StatusCreated}))
}

func TestProxyOutageResetsConnectionsUntilRestored(t *testing.T) {
	g := NewWithT(t)
	px := newProxy(t, 1)
	code, _ := get(g, px, "/api/v1/namespaces/default")
	g.Expect(code).To(Equal(http.StatusOK))
	px.Outage()
	_, err := http.Get(px.URL() + "/api/v1/namespaces/default")
	g.Expect(err).To(HaveOccurred())
	px.Restore()
	code, _ = get(g, px, "/api/v1/namespaces/default")
	g.Expect(code).To(Equal(http.StatusOK))
}

// watchConfigMaps watches the config maps of ns through the proxy.
func watchConfigMaps(g Gomega, px *faults.Proxy, ns string) watch.Interface {
	cs, err := kubernetes.NewForConfig(throughProxy(px, -1, 0))
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return w
}

func createConfigMap(g Gomega, ns, name string) {
	g.Expect(k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
}

func TestProxyStallsWatchesAndReleasesOrEndsThem(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	px := newProxy(t, 1)
	w := watchConfigMaps(g, px, ns)
	defer w.Stop()
	name := func(e watch.Event) string { return e.Object.(*corev1.ConfigMap).Name }

	createConfigMap(g, ns, "streamed")
	g.Eventually(w.ResultChan(), timeout).Should(Receive(WithTransform(name, Equal("streamed"))), "events are flushed as they come")
	g.Eventually(px.OpenWatches, timeout).Should(HaveLen(1))

	px.StallWatches()
	createConfigMap(g, ns, "held")
	g.Consistently(w.ResultChan(), time.Second).ShouldNot(Receive())
	px.ReleaseWatches()
	g.Eventually(w.ResultChan(), timeout).Should(Receive(WithTransform(name, Equal("held"))))

	px.StallWatches()
	createConfigMap(g, ns, "dropped")
	g.Consistently(w.ResultChan(), time.Second).ShouldNot(Receive())
	px.EndWatches()
	g.Eventually(w.ResultChan(), timeout).Should(BeClosed(), "the stream ends; the client must watch again")
	g.Expect(px.OpenWatches()).To(BeEmpty())

	watches := 0
	for _, r := range px.Requests() {
		if r.Watch {
			watches++
			g.Expect(strings.HasSuffix(r.Path, "/configmaps")).To(BeTrue())
		}
	}
	g.Expect(watches).To(Equal(1))
}
