package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/webhook"
)

const admitRing = "admit-ring"

// shardedRegistry is an operator of the test's KopfExamples: a create
// handler, a delete handler for those whose spec.field is "held" (they get
// the finalizer), and a level handler that owns ConfigMaps (their children
// follow them to their shard).
func shardedRegistry(t *testing.T) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return "created", nil
	}, handlers.ID("create_fn"), selectTest(t))
	handlers.OnDelete(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return nil, nil
	}, handlers.ID("delete_fn"), selectTest(t), handlers.Field("spec.field"), handlers.Value("held"))
	handlers.OnReconcile(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (ctrlreconcile.Result, error) {
		return ctrlreconcile.Result{}, nil
	}, handlers.Owns(&corev1.ConfigMap{}), selectTest(t))
	return reg
}

// runShardOf runs shardedRegistry as shard name of admitRing in ns, with
// the webhook server of webhookOpts (none if nil).
func runShardOf(t *testing.T, ns, name string, webhookOpts *webhook.Options, requests *envtest.RequestCounter) {
	t.Helper()
	op, err := envtest.RunOperator(context.Background(), cfg, shardedRegistry(t), envtest.OperatorOptions{
		Scheme: scheme, Namespaces: []string{ns}, Webhook: webhookOpts, Requests: requests,
		Reconcile: reconcile.Options{Sharding: &reconcile.Sharding{Ring: admitRing, Shard: name, Namespace: ns}},
	})
	if err != nil {
		t.Fatalf("starting shard %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stopping shard %s: %v", name, err)
		}
	})
}

// namedExample is a KopfExample of the test with a name: an object with
// only a generateName has no key on the ring at admission.
func namedExample(t *testing.T, ns, name, field string) *kopfv1.KopfExample {
	obj := example(t, ns, field)
	obj.GenerateName, obj.Name = "", name
	return obj
}

// examplesOnBothShards is three named KopfExamples of ns with field, at
// least one on each of shard-a and shard-b: the ring hashes the namespace,
// which is random, so fixed names would all land on one shard now and then.
func examplesOnBothShards(t *testing.T, g Gomega, ns, field string) []*kopfv1.KopfExample {
	var objs []*kopfv1.KopfExample
	for i := 1; len(objs) < 3; i++ {
		obj := namedExample(t, ns, fmt.Sprintf("%s-%d", field, i), field)
		if len(objs) == 1 && ringChoice(g, obj) == ringChoice(g, objs[0]) {
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

var exampleKind = schema.GroupKind{Group: "kopf.dev", Kind: "KopfExample"}

// ringChoice is the shard of shard-a and shard-b that the ring puts obj, a
// KopfExample, on.
func ringChoice(g Gomega, obj metav1.Object) string {
	key, err := shard.ObjectKey(exampleKind, obj)
	g.Expect(err).NotTo(HaveOccurred())
	return shard.NewRing("shard-a", "shard-b").ShardFor(key)
}

// With sharding and the webhook, new objects of the operator's namespace
// come back from their create labelled for the shard the ring of live
// shards puts them on (children for their controller's), with the
// finalizer only where a delete handler needs it, and a create costs the
// operators one write in all: the handlers' outcome. Objects created while
// no webhook serves are labelled by the assigner, and objects of other
// namespaces are left alone.
func TestNewObjectsGetTheirShardAtAdmissionAndACreateCostsOneWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)

	early := namedExample(t, ns, "early", "free")
	g.Expect(k8s.Create(ctx, early)).To(Succeed())
	g.Expect(early.Labels).NotTo(HaveKey(shard.ShardLabel(admitRing)))

	var requests envtest.RequestCounter
	opts := webhook.Options{Name: testLabel(t) + ".test.gopf.dev", CertDir: t.TempDir(), Finalizers: webhook.FinalizersAlways}
	runShardOf(t, ns, "shard-a", &opts, &requests)
	runShardOf(t, ns, "shard-b", nil, &requests)

	w := finalizerWebhookIn(g, opts.Name)
	g.Expect(*w.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	g.Expect(*w.TimeoutSeconds).To(BeNumerically("<=", 2))

	label := shard.ShardLabel(admitRing)
	g.Eventually(func(g Gomega) {
		var got kopfv1.KopfExample
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(early), &got)).To(Succeed())
		g.Expect(got.Labels).To(HaveKeyWithValue(label, ringChoice(g, early)),
			"the assigner did not label an object created before the webhook served")
		g.Expect(got.Status.Extra).To(HaveKey("create_fn"), "its shard did not handle it")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	objs := append(examplesOnBothShards(t, g, ns, "held"), examplesOnBothShards(t, g, ns, "free")...)
	// Both shards are live once the webhook's view of the ring says so:
	// a dry run goes through the webhook and stores nothing.
	g.Eventually(func(g Gomega) {
		for _, obj := range objs {
			dry := obj.DeepCopy()
			g.Expect(k8s.Create(ctx, dry, client.DryRunAll)).To(Succeed())
			g.Expect(dry.Labels).To(HaveKeyWithValue(label, ringChoice(g, obj)))
		}
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	requests.Reset()
	shards := map[string]bool{}
	for _, obj := range objs {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		g.Expect(obj.Labels).To(HaveKeyWithValue(label, ringChoice(g, obj)), obj.Name)
		shards[obj.Labels[label]] = true
		if obj.Spec.Field == "held" {
			g.Expect(obj.Finalizers).To(ConsistOf(gopfFinalizer), obj.Name)
		} else {
			g.Expect(obj.Finalizers).To(BeEmpty(), obj.Name)
		}
	}
	g.Expect(shards).To(HaveLen(2), "the test's objects should land on both shards")

	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: ns, Labels: map[string]string{"gopf-test": testLabel(t)}}}
	owner := objs[0]
	child.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: kopfv1.GroupVersion.String(), Kind: "KopfExample", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}
	g.Expect(k8s.Create(ctx, child)).To(Succeed())
	g.Expect(child.Labels).To(HaveKeyWithValue(label, owner.Labels[label]), "a child goes to its controller's shard")
	g.Expect(child.Finalizers).To(BeEmpty())

	outside := namedExample(t, other, "held-1", "held")
	g.Expect(k8s.Create(ctx, outside)).To(Succeed())
	g.Expect(outside.Labels).NotTo(HaveKey(label), "an object of another namespace got a shard")
	g.Expect(outside.Finalizers).To(BeEmpty())

	for _, obj := range objs {
		g.Eventually(func(g Gomega) {
			var got kopfv1.KopfExample
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), &got)).To(Succeed())
			g.Expect(got.Status.Extra).To(HaveKey("create_fn"))
		}, 30*time.Second, 50*time.Millisecond).Should(Succeed(), obj.Name)
	}
	writes := func() int { return requests.Writes("kopfexamples", "kopfexamples/status", "configmaps") }
	g.Eventually(writes, 30*time.Second, 50*time.Millisecond).Should(Equal(len(objs)))
	g.Consistently(writes, 2*time.Second, 100*time.Millisecond).Should(Equal(len(objs)), "requests: %v", requests.Snapshot())
}
