package reconcile_test

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/test/kinds"
)

// metricLabel reads one label of a line of kube-apiserver's metrics.
var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiServerCounts reads kube-apiserver's metrics and returns, per
// resource, the updates it sent to etcd ("etcd <resource>") and the
// writes (PATCH, PUT) it answered with success ("writes <resource>",
// subresources included; "PATCH <resource>" and "PUT <resource>" each). An applied write is one etcd update; a write
// applied to a stale object (one the API server's watch cache had not yet
// seen change) is refused by etcd and applied again: two.
func apiServerCounts(g Gomega) map[string]int {
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	counts := map[string]int{}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		etcd, writes := strings.HasPrefix(line, "etcd_requests_total{"), strings.HasPrefix(line, "apiserver_request_total{")
		if !etcd && !writes {
			continue
		}
		labels := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(line, -1) {
			labels[m[1]] = m[2]
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		g.Expect(err).NotTo(HaveOccurred(), line)
		switch {
		case etcd && labels["operation"] == "update":
			counts["etcd "+labels["resource"]] += int(n)
		case writes && (labels["verb"] == "PATCH" || labels["verb"] == "PUT") && strings.HasPrefix(labels["code"], "2"):
			counts["writes "+labels["resource"]] += int(n)
			counts[labels["verb"]+" "+labels["resource"]] += int(n)
		}
	}
	g.Expect(lines.Err()).NotTo(HaveOccurred())
	return counts
}

// gopf's writes on a new object, its finalizer and then the handlers'
// outcome with the state, never reach the API server before its watch
// cache shows the write before: such a write is applied to the stale
// object, refused by etcd and applied again, nearly twice its cost (one
// create in ten at 5,000 objects when the two went back to back). On
// every kind: the count of updates kube-apiserver sent to etcd equals the
// count of writes it applied.
func TestNewObjectsCostTheAPIServerNoSecondTryOfAWriteOnEveryKind(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme)
	ctx := env.Ctx
	sel := handlers.Labels{"stale": env.Namespace}
	labels := map[string]string{"stale": env.Namespace}
	var cs envtest.Calls
	reg := handlers.NewRegistry()
	onCreateAndDelete[*corev1.Namespace](reg, &cs, "namespace", sel)
	onCreateAndDelete[*corev1.Pod](reg, &cs, "pod", sel)
	onCreateAndDelete[*corev1.ConfigMap](reg, &cs, "configmap", sel)
	onCreateAndDelete[*kinds.Widget](reg, &cs, "widget", sel)
	onCreateAndDelete[*kinds.ClusterWidget](reg, &cs, "clusterwidget", sel)
	onCreateAndDelete[*unstructured.Unstructured](reg, &cs, "unstructured", sel, handlers.ForResource("kopfexamples.kopf.dev"))
	var requests envtest.RequestCounter
	env.Start(reg, envtest.OperatorOptions{Requests: &requests})

	const perKind = 100
	meta := func(i int, namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: fmt.Sprintf("stale-%s-%d", env.Namespace, i), Labels: labels}
		if namespaced {
			m.Namespace = env.Namespace
		}
		return m
	}
	kindsOf := map[string]string{
		"namespace": "namespaces", "pod": "pods", "configmap": "configmaps",
		"widget": "widgets", "clusterwidget": "clusterwidgets", "unstructured": "kopfexamples",
	}
	objects := make([][]client.Object, perKind)
	for i := range perKind {
		example := newExample(env.Namespace, meta(i, true).Name)
		example.SetLabels(labels)
		objects[i] = []client.Object{
			&corev1.Namespace{ObjectMeta: meta(i, false)},
			&corev1.Pod{ObjectMeta: meta(i, true), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}}},
			&corev1.ConfigMap{ObjectMeta: meta(i, true)},
			&kinds.Widget{ObjectMeta: meta(i, true), Spec: kinds.WidgetSpec{Size: 1}},
			&kinds.ClusterWidget{ObjectMeta: meta(i, false), Spec: kinds.WidgetSpec{Size: 1}},
			example,
		}
		for _, obj := range objects[i] {
			switch obj.(type) {
			case *corev1.Namespace, *kinds.ClusterWidget:
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
			}
		}
	}
	before := apiServerCounts(g)
	// The objects come all at once, as from a deployment tool, so that
	// the operator writes while the API server is busy.
	failed := make(chan error, perKind*len(objects[0]))
	var created sync.WaitGroup
	for i := range perKind {
		created.Go(func() {
			for _, obj := range objects[i] {
				if err := env.Client.Create(ctx, obj); err != nil {
					failed <- err
				}
			}
		})
	}
	created.Wait()
	close(failed)
	for err := range failed {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for kind := range kindsOf {
		g.Eventually(func() int { return cs.Count(kind + "_create") }, timeout).Should(Equal(perKind), kind)
	}
	// Every object's state is written (its finalizer, then the state with
	// results where they go: at least two writes each, more if one was
	// refused and sent again), then the API server's counts of what it
	// applied and what it sent to etcd must agree.
	since := func(g Gomega, key string) int { return apiServerCounts(g)[key] - before[key] }
	for kind, resource := range kindsOf {
		g.Eventually(func(g Gomega) {
			writes := since(g, "writes "+resource)
			g.Expect(writes).To(BeNumerically(">=", 2*perKind), "%s: %v", kind, requests.Snapshot())
			g.Expect(since(g, "etcd "+resource)).To(Equal(writes), "%s: updates sent to etcd, against the writes applied", kind)
		}, timeout).Should(Succeed())
	}
}
