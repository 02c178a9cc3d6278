package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{})
}

// start runs the operator in a new namespace until the test ends.
func start(t *testing.T) (client.Client, string) {
	t.Helper()
	g := NewWithT(t)
	cp, err := envtest.Shared(envtest.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	k8s, err := client.New(cp.Config, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "builtins-"}}
	g.Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	op, err := envtest.RunOperator(context.Background(), cp.Config, registry(), envtest.OperatorOptions{Namespaces: []string{ns.Name}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(op.Stop()).To(Succeed()) })
	return k8s, ns.Name
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func TestLabelledPodsGetTheirExpiryAndOthersAreLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	k8s, ns := start(t)
	plain := newPod(ns, "plain", nil)
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	pod := newPod(ns, "short-lived", map[string]string{ttlLabel: "90m"})
	g.Expect(k8s.Create(ctx, pod)).To(Succeed())

	g.Expect(envtest.WaitFor(ctx, k8s, pod, func(pod *corev1.Pod) bool { return pod.Annotations[expiresAnnotation] != "" })).To(Succeed())
	g.Expect(pod.Annotations[expiresAnnotation]).To(Equal(pod.CreationTimestamp.Add(90 * time.Minute).UTC().Format(time.RFC3339)))
	// A Pod's status has no room for gopf's state: it is in annotations.
	g.Expect(envtest.WaitFor(ctx, k8s, pod, func(pod *corev1.Pod) bool {
		return pod.Annotations["gopf.dev/last-handled-configuration"] != ""
	})).To(Succeed())

	// The unlabelled Pod was created first, and still nothing touched it.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(plain), plain)).To(Succeed())
	g.Expect(plain.Annotations).To(BeEmpty())
	g.Expect(plain.Finalizers).To(BeEmpty())
}

func TestServicesCarryASummaryOfTheirPorts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	k8s, ns := start(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	g.Expect(k8s.Create(ctx, svc)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, svc, func(svc *corev1.Service) bool {
		return svc.Annotations[portsAnnotation] == "http:80/TCP"
	})).To(Succeed())

	// A merge patch, not an Update: the operator writes to the Service too.
	ports := `{"spec":{"ports":[{"name":"http","port":80},{"name":"dns","port":53,"protocol":"UDP"}]}}`
	g.Expect(k8s.Patch(ctx, svc, client.RawPatch("application/merge-patch+json", []byte(ports)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, svc, func(svc *corev1.Service) bool {
		return svc.Annotations[portsAnnotation] == "http:80/TCP,dns:53/UDP"
	})).To(Succeed())
}
