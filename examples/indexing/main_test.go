package main

import (
	"testing"
	"time"

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

func TestHandlersSeeTheIndexOfPodsAsItChanges(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, scheme) // the operator starts later
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	// Pods and the KopfExample exist before the operator starts: the index
	// has seen all Pods before the create handler runs.
	for name, app := range map[string]string{"db-0": "db", "db-1": "db", "web-0": "web", "other": ""} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
		if app == "" {
			pod.Labels = nil
		}
		g.Expect(k8s.Create(ctx, pod)).To(Succeed())
	}
	obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-watcher"}, Spec: kopfv1.KopfExampleSpec{Field: "db"}}
	g.Expect(k8s.Create(ctx, obj)).To(Succeed())

	env.Start(registry(200*time.Millisecond), envtest.OperatorOptions{})
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["pods_at_creation"].Raw != nil })).To(Succeed())
	g.Expect(string(obj.Status.Extra["pods_at_creation"].Raw)).To(MatchJSON(`{"app":"db","names":["db-0","db-1"]}`))

	// The index follows the Pods; the timer reports the change.
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0"}})).To(Succeed())
	g.Expect(k8s.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"db"}}}`)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, obj, func(obj *kopfv1.KopfExample) bool {
		return string(obj.Status.Extra["pods"].Raw) == `{"app":"db","names":["db-1","other"]}`
	})).To(Succeed())
}
