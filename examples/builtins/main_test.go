package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{})
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func TestLabelledPodsGetTheirExpiryAndOthersAreLeftAlone(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{}) // built-in kinds only
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
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
	env := envtest.Run(t, registry(), envtest.OperatorOptions{})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
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
