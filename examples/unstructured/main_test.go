package main

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers/objects"
)

func TestMain(m *testing.M) {
	envtest.Main(m, envtest.Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
}

// newPage is a Webpage without Go types, as the operator sees it.
func newPage(ns, name string, spec map[string]any) *unstructured.Unstructured {
	page := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	page.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	page.SetNamespace(ns)
	page.SetName(name)
	return page
}

// rendered reports whether create_page recorded the page's ConfigMap.
func rendered(page *unstructured.Unstructured) bool {
	name, err := objects.Decode[string](page, "status.create_page.configMap")
	return err == nil && name != ""
}

func TestAWebpageGetsAnAdoptedConfigMapNamedInItsStatus(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{}) // no scheme: no Go types
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	page := newPage(ns, "home", map[string]any{"title": "Home", "body": "Fish & chips", "theme": "dark"})
	g.Expect(k8s.Create(ctx, page)).To(Succeed())

	g.Expect(envtest.WaitFor(ctx, k8s, page, rendered)).To(Succeed())
	name, err := objects.Decode[string](page, "status.create_page.configMap")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("home"))

	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	g.Expect(cm.Data["index.html"]).To(ContainSubstring("<h1>Home</h1><p>Fish &amp; chips</p>"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(themeLabel, "dark"))
	ref := metav1.GetControllerOf(&cm)
	g.Expect(ref).NotTo(BeNil())
	g.Expect(ref.Kind).To(Equal(kind))
	g.Expect(ref.UID).To(Equal(page.GetUID()))
}

func TestChangingTheSpecPatchesOnlyTheOperatorsFieldsOfTheConfigMap(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Run(t, registry(), envtest.OperatorOptions{})
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	page := newPage(ns, "news", map[string]any{"title": "News", "theme": "light"})
	g.Expect(k8s.Create(ctx, page)).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, page, rendered)).To(Succeed())

	// Someone else keeps a file and a label of their own in the ConfigMap.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "news"}}
	team := "web"
	g.Expect(k8s.Patch(ctx, cm, objects.NewChildPatch().
		SetKeys([]string{"data", "robots.txt"}, "User-agent: *").
		SetLabel("team", &team))).To(Succeed())
	g.Expect(cm.Data).To(HaveKey("index.html"), "the client reads the patched object back")
	created := cm.UID

	// A new title, and no theme: a merge patch of the unstructured page.
	g.Expect(k8s.Patch(ctx, page, objects.NewChildPatch().
		Set("spec.title", "Breaking news").
		Set("spec.theme", nil))).To(Succeed())
	g.Expect(envtest.WaitFor(ctx, k8s, cm, func(cm *corev1.ConfigMap) bool {
		_, themed := cm.Labels[themeLabel]
		return !themed
	})).To(Succeed())
	g.Expect(cm.Data["index.html"]).To(ContainSubstring("<h1>Breaking news</h1>"))
	g.Expect(cm.Data).To(HaveKeyWithValue("robots.txt", "User-agent: *"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("team", "web"))
	g.Expect(cm.UID).To(Equal(created), "patched, not made again")
	g.Expect(metav1.GetControllerOf(cm)).NotTo(BeNil(), "still adopted")
}

func TestAConfigMapThatExistsAlreadyIsBroughtUpToDate(t *testing.T) {
	g := NewWithT(t)
	env := envtest.New(t, nil)
	ctx, k8s, ns := env.Ctx, env.Client, env.Namespace
	// What an earlier attempt of create_page left, before the spec changed.
	stale := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "about", Labels: map[string]string{themeLabel: "dark"}},
		Data:       map[string]string{"index.html": render(pageSpec{Title: "Old"})},
	}
	g.Expect(k8s.Create(ctx, stale)).To(Succeed())
	page := newPage(ns, "about", map[string]any{"title": "About us"})
	g.Expect(k8s.Create(ctx, page)).To(Succeed())
	env.Start(registry(), envtest.OperatorOptions{})

	g.Expect(envtest.WaitFor(ctx, k8s, page, rendered)).To(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stale), cm)).To(Succeed())
	g.Expect(cm.Data["index.html"]).To(ContainSubstring("<h1>About us</h1>"))
	g.Expect(cm.Labels).NotTo(HaveKey(themeLabel))
}
