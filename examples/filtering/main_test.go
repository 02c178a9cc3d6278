package main

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/envtest"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}})
}

var scheme = envtest.NewScheme(kopfv1.AddToScheme)

func TestHandlersSeeOnlyTheObjectsTheirFiltersSelect(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{Scheme: scheme})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace

	// Matches nothing: no labels, no annotations, one item, another value.
	stranger := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"},
		Spec:       kopfv1.KopfExampleSpec{Field: "other", Items: []string{"only"}},
	}
	g.Expect(k8s.Create(ctx, stranger)).To(Succeed())
	created := stranger.ResourceVersion

	// Matches everything (Kopf's sample object).
	sample := &kopfv1.KopfExample{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "sample",
			Labels:      map[string]string{"somelabel": "somevalue"},
			Annotations: map[string]string{"someannotation": "somevalue"},
		},
		Spec: kopfv1.KopfExampleSpec{Field: "value", Items: []string{"item1", "item2"}},
	}
	g.Expect(k8s.Create(ctx, sample)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, sample, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["gopf"].Raw != nil })).To(Succeed())
	matched := []string{"label_value", "label_present", "label_absent_too", "label_func", "annotation_value", "annotation_func", "when_items", "field_value"}
	for _, id := range matched {
		g.Expect(sample.Status.Extra).To(HaveKey(id))
		g.Expect(string(sample.Status.Extra[id].Raw)).To(MatchJSON(`{"matched":true}`), id)
	}
	g.Expect(sample.Finalizers).To(ConsistOf("gopf.dev/finalizer"))

	g.Expect(k8s.Patch(ctx, sample, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"field":"changed"}}`)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, sample, func(obj *kopfv1.KopfExample) bool {
		return obj.Status.Extra["field_value_to_changed"].Raw != nil
	})).To(Succeed())
	g.Expect(string(sample.Status.Extra["field_value_to_changed"].Raw)).To(MatchJSON(`{"from":"value","to":"changed"}`))

	// The stranger was created first, and nothing has written to it since:
	// no finalizer, no state, no results.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stranger), stranger)).To(Succeed())
	g.Expect(stranger.ResourceVersion).To(Equal(created))
	g.Expect(stranger.Finalizers).To(BeEmpty())
	g.Expect(stranger.Status.Extra).To(BeEmpty())

	// Once it matches a filter, it is handled as created.
	g.Expect(k8s.Patch(ctx, stranger, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"somelabel":"other"}}}`)))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, stranger, func(obj *kopfv1.KopfExample) bool { return obj.Status.Extra["gopf"].Raw != nil })).To(Succeed())
	g.Expect(string(stranger.Status.Extra["label_present"].Raw)).To(MatchJSON(`{"matched":true}`))
	g.Expect(stranger.Finalizers).To(ConsistOf("gopf.dev/finalizer"))
	g.Expect(stranger.Status.Extra).NotTo(HaveKey("label_value"), "somelabel is not somevalue")
	g.Expect(stranger.Status.Extra).NotTo(HaveKey("label_func"), "other does not start with some")
	g.Expect(stranger.Status.Extra).NotTo(HaveKey("field_value"))
}
