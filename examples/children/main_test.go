package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestEveryKopfExampleGetsAnAdoptedPod(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	obj := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent", Labels: map[string]string{"somelabel": "somevalue"}},
		Spec:       kopfv1.KopfExampleSpec{Duration: "1m"},
	}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["create_fn"].Raw != nil })).To(Succeed())
	var result struct{ Pod, UID string }
	g.Expect(json.Unmarshal(obj.Status.Extra["create_fn"].Raw, &result)).To(Succeed())

	// envtest has no scheduler, kubelet or garbage collector: the Pod never
	// runs, but everything that ties it to its owner is there.
	var pod corev1.Pod
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: result.Pod}, &pod)).To(Succeed())
	g.Expect(string(pod.UID)).To(Equal(result.UID))
	g.Expect(pod.Name).To(HavePrefix("parent-"))
	g.Expect(pod.Labels).To(HaveKeyWithValue("somelabel", "somevalue"))
	g.Expect(pod.Spec.Containers[0].Command).To(Equal([]string{"sleep", "60"}))
	owner := metav1.GetControllerOf(&pod)
	g.Expect(owner).NotTo(BeNil())
	g.Expect(owner.APIVersion).To(Equal("kopf.dev/v1"))
	g.Expect(owner.Kind).To(Equal("KopfExample"))
	g.Expect(owner.UID).To(Equal(obj.UID))
	g.Expect(*owner.BlockOwnerDeletion).To(BeTrue())
}
