package objects_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers/objects"
)

func ownerDeployment() *appsv1.Deployment {
	o := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u1", Labels: map[string]string{"team": "a"}}}
	o.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	return o
}

func controllerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: uid, Controller: &t}
}

func TestAdoptAllAdoptsTypedAndUnstructuredChildrenTogether(t *testing.T) {
	owner := ownerDeployment()
	cm := &corev1.ConfigMap{}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "own"}}}
	if err := objects.AdoptAll(owner, []client.Object{cm, u}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []client.Object{cm, u} {
		if c.GetNamespace() != "prod" || c.GetLabels()["team"] != "a" || metav1.GetControllerOf(c) == nil || metav1.GetControllerOf(c).UID != "u1" {
			t.Errorf("%T not adopted: ns %q labels %v refs %v", c, c.GetNamespace(), c.GetLabels(), c.GetOwnerReferences())
		}
	}
	if cm.GenerateName != "web-" || u.GetName() != "own" || u.GetGenerateName() != "" {
		t.Errorf("naming: configmap %q/%q, secret %q/%q", cm.Name, cm.GenerateName, u.GetName(), u.GetGenerateName())
	}

	pods := []*corev1.Pod{{}, {}}
	if err := objects.AdoptAll(owner, pods); err != nil || pods[1].GenerateName != "web-" {
		t.Errorf("a slice of typed pointers: %v, %+v", err, pods[1].ObjectMeta)
	}
}

func TestAdoptAllChangesNoChildWhenOneCannotBeAdopted(t *testing.T) {
	owner := ownerDeployment()
	free := &corev1.ConfigMap{}
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken", OwnerReferences: []metav1.OwnerReference{controllerRef("Other", "boss", "u9")}}}
	err := objects.AdoptAll(owner, []*corev1.ConfigMap{free, taken})
	if err == nil || !strings.Contains(err.Error(), "children[1]") || !strings.Contains(err.Error(), "already controlled by Other boss") {
		t.Fatalf("error = %v", err)
	}
	if free.Namespace != "" || free.GenerateName != "" || len(free.OwnerReferences) != 0 || len(free.Labels) != 0 {
		t.Errorf("the adoptable child was changed: %+v", free.ObjectMeta)
	}
	if err := objects.AdoptAll(owner, []*corev1.ConfigMap{free, nil}); err == nil || !strings.Contains(err.Error(), "children[1] is nil") {
		t.Errorf("a nil child: %v", err)
	}
}

func TestAdoptForcedTakesOverTheNameNamespaceLabelsAndController(t *testing.T) {
	owner := ownerDeployment()
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "dev", Labels: map[string]string{"team": "b", "x": "y"},
		OwnerReferences: []metav1.OwnerReference{controllerRef("Other", "boss", "u9")}}}
	if err := objects.Adopt(owner, child, objects.Forced()); err != nil {
		t.Fatal(err)
	}
	if child.Name != "" || child.GenerateName != "web-" || child.Namespace != "prod" || child.Labels["team"] != "a" || child.Labels["x"] != "y" {
		t.Errorf("not taken over: %+v", child.ObjectMeta)
	}
	refs := child.OwnerReferences
	if len(refs) != 2 || refs[0].UID != "u9" || metav1.GetControllerOf(child).UID != "u1" {
		t.Errorf("owner references = %+v: the other owner stays, as a plain owner", refs)
	}

	clusterOwner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", UID: "u3"}}
	clusterOwner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := objects.Adopt(clusterOwner, child, objects.Forced()); err != nil || child.Namespace != "prod" {
		t.Errorf("a cluster-scoped owner cleared the namespace: %v, %q", err, child.Namespace)
	}
}

func TestAdoptStrictNamesTheChildAfterItsOwner(t *testing.T) {
	owner := ownerDeployment()
	child := &corev1.ConfigMap{}
	if err := objects.Adopt(owner, child, objects.Strict()); err != nil || child.Name != "web" || child.GenerateName != "" {
		t.Errorf("strict: %v, %q/%q", err, child.Name, child.GenerateName)
	}
	named := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "own-"}}
	if err := objects.Adopt(owner, named, objects.Strict()); err != nil || named.Name != "" || named.GenerateName != "own-" {
		t.Errorf("strict without forced renamed a named child: %v, %q/%q", err, named.Name, named.GenerateName)
	}
	if err := objects.Adopt(owner, named, objects.Strict(), objects.Forced()); err != nil || named.Name != "web" || named.GenerateName != "" {
		t.Errorf("strict and forced: %v, %q/%q", err, named.Name, named.GenerateName)
	}
}

func TestAdoptNestedReplacesThePodTemplateDefaults(t *testing.T) {
	owner := ownerDeployment()
	sts := &appsv1.StatefulSet{}
	if err := objects.Adopt(owner, sts, objects.Nested[string]()); err != nil {
		t.Fatal(err)
	}
	if sts.Labels["team"] != "a" || len(sts.Spec.Template.Labels) != 0 {
		t.Errorf("Nested() labelled the template: %v / %v", sts.Labels, sts.Spec.Template.Labels)
	}
	sts = &appsv1.StatefulSet{}
	if err := objects.Adopt(owner, sts); err != nil || sts.Spec.Template.Labels["team"] != "a" {
		t.Errorf("by default the pod template is labelled: %v, %v", err, sts.Spec.Template.Labels)
	}

	// A custom resource with a pod template elsewhere, given as keys and
	// dotted at once (Nested options add up).
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"workers": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "own"}}}},
		"db.x":    map[string]any{},
	}}}
	err := objects.Adopt(owner, u, objects.Nested("spec.workers.template"), objects.Nested([]string{"spec", "db.x"}), objects.Forced())
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringMap(u.Object, "spec", "workers", "template", "metadata", "labels")
	dbx, _, _ := unstructured.NestedStringMap(u.Object, "spec", "db.x", "metadata", "labels")
	if got["team"] != "a" || dbx["team"] != "a" {
		t.Errorf("nested labels: %v, %v", got, dbx)
	}
	if _, found, _ := unstructured.NestedMap(u.Object, "spec", "template"); found {
		t.Error("a default path was labelled although Nested named others")
	}
}

func TestNestedPathsThatCannotBeLabelledAreErrors(t *testing.T) {
	owner := ownerDeployment()
	for name, tc := range map[string]struct {
		opt  objects.AdoptOption
		want string
	}{
		"empty path":    {objects.Nested(""), "empty"},
		"empty segment": {objects.Nested("spec..template"), "empty segment"},
		"empty key":     {objects.Nested([]string{"spec", ""}), "empty key"},
		"not an object": {objects.Nested("spec.replicas"), "spec.replicas is a int64, not an object"},
		"bad metadata":  {objects.Nested("spec.odd"), "metadata is a string"},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1), "odd": map[string]any{"metadata": "x"}}}}
		before := u.DeepCopy()
		err := objects.Adopt(owner, u, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", name, err, tc.want)
		}
		if !equalObjects(before, u) {
			t.Errorf("%s: a failed Adopt changed the child: %v", name, u.Object)
		}
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

func TestLabelKeepsTheChildsOwnUnlessForcedAndReachesNestedPaths(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "own"}}}
	if err := objects.Label(job, map[string]string{"app": "x", "env": "prod"}); err != nil {
		t.Fatal(err)
	}
	if job.Labels["app"] != "own" || job.Labels["env"] != "prod" || len(job.Spec.Template.Labels) != 0 {
		t.Errorf("without options: %v, template %v (Label nests only when asked, as Kopf)", job.Labels, job.Spec.Template.Labels)
	}
	if err := objects.Label(job, map[string]string{"app": "x"}, objects.Forced(), objects.Nested("spec.template")); err != nil {
		t.Fatal(err)
	}
	if job.Labels["app"] != "x" || job.Spec.Template.Labels["app"] != "x" {
		t.Errorf("forced and nested: %v, template %v", job.Labels, job.Spec.Template.Labels)
	}
	two := int32(2)
	job.Spec.Parallelism = &two
	if err := objects.Label(job, map[string]string{"a": "b"}, objects.Nested("spec.parallelism.x")); err == nil {
		t.Error("a nested path through a number was accepted")
	}
}

func TestHarmonizeNamingGivesAPrefixOrWithStrictTheName(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		child                metav1.ObjectMeta
		opts                 []objects.NamingOption
		wantName, wantPrefix string
	}{
		{"unnamed", metav1.ObjectMeta{}, nil, "", "db-"},
		{"unnamed strict", metav1.ObjectMeta{}, []objects.NamingOption{objects.Strict()}, "db", ""},
		{"named", metav1.ObjectMeta{Name: "own"}, nil, "own", ""},
		{"prefixed", metav1.ObjectMeta{GenerateName: "own-"}, []objects.NamingOption{objects.Strict()}, "", "own-"},
		{"named forced", metav1.ObjectMeta{Name: "own"}, []objects.NamingOption{objects.Forced()}, "", "db-"},
		{"prefixed forced strict", metav1.ObjectMeta{GenerateName: "own-"}, []objects.NamingOption{objects.Forced(), objects.Strict()}, "db", ""},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName(tc.child.Name)
		u.SetGenerateName(tc.child.GenerateName)
		if err := objects.HarmonizeNaming(u, "db", tc.opts...); err != nil {
			t.Fatal(err)
		}
		if u.GetName() != tc.wantName || u.GetGenerateName() != tc.wantPrefix {
			t.Errorf("%s: name %q generateName %q, want %q %q", tc.name, u.GetName(), u.GetGenerateName(), tc.wantName, tc.wantPrefix)
		}
	}
	if err := objects.HarmonizeNaming(&corev1.Pod{}, ""); err == nil {
		t.Error("an empty name was accepted")
	}
}

func TestAdjustNamespaceKeepsTheChildsUnlessForced(t *testing.T) {
	pod := &corev1.Pod{}
	objects.AdjustNamespace(pod, "a")
	objects.AdjustNamespace(pod, "b")
	if pod.Namespace != "a" {
		t.Errorf("namespace = %q", pod.Namespace)
	}
	objects.AdjustNamespace(pod, "b", objects.Forced())
	if pod.Namespace != "b" {
		t.Errorf("forced: namespace = %q", pod.Namespace)
	}
}

func TestOwnerReferencesAreBuiltAppendedAndRemoved(t *testing.T) {
	owner := ownerDeployment()
	ref, err := objects.OwnerReference(owner)
	if err != nil || ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != "web" || ref.UID != "u1" ||
		!*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("OwnerReference = %+v, %v", ref, err)
	}
	ref, _ = objects.OwnerReference(owner, objects.NotController(), objects.NoBlockOwnerDeletion())
	if ref.Controller != nil || ref.BlockOwnerDeletion != nil {
		t.Errorf("plain reference = %+v", ref)
	}
	if _, err := objects.OwnerReference(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}); err == nil || !strings.Contains(err.Error(), "apiVersion/kind") {
		t.Errorf("an owner without a kind: %v", err)
	}
	unstored := ownerDeployment()
	unstored.UID = ""
	if _, err := objects.OwnerReference(unstored); err == nil || !strings.Contains(err.Error(), "uid") {
		t.Errorf("an owner without a uid: %v", err)
	}

	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{controllerRef("Other", "boss", "u9")}}}
	if err := objects.AppendOwnerReference(owner, child); err == nil || !strings.Contains(err.Error(), "already controlled") {
		t.Errorf("a second controller: %v", err)
	}
	if err := objects.AppendOwnerReference(owner, child, objects.NotController()); err != nil || len(child.OwnerReferences) != 2 {
		t.Fatalf("a plain owner next to the controller: %v, %+v", err, child.OwnerReferences)
	}
	if err := objects.AppendOwnerReference(owner, child, objects.Forced()); err != nil ||
		len(child.OwnerReferences) != 2 || metav1.GetControllerOf(child).UID != "u1" {
		t.Errorf("forced: the same owner's reference is replaced and takes control: %v, %+v", err, child.OwnerReferences)
	}
	if err := objects.RemoveOwnerReference(owner, child); err != nil || len(child.OwnerReferences) != 1 || child.OwnerReferences[0].UID != "u9" {
		t.Errorf("removed: %v, %+v", err, child.OwnerReferences)
	}
	if err := objects.RemoveOwnerReference(unstored, child); err == nil {
		t.Error("removing a reference to an owner without a uid was accepted")
	}
}

func TestObjectReferenceNamesTheObject(t *testing.T) {
	got := objects.ObjectReference(ownerDeployment())
	want := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web", UID: "u1"}
	if got != want {
		t.Errorf("ObjectReference = %+v", got)
	}
}

func TestAdoptSetsOwnerNamespacePrefixAndLabelsDownToPodTemplates(t *testing.T) {
	owner := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u1", Labels: map[string]string{"team": "a", "tier": "x"}}}
	owner.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))

	job := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "own"}}}
	job.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"pod": "yes"}
	if err := objects.Adopt(owner, job); err != nil {
		t.Fatal(err)
	}
	if job.Namespace != "prod" || job.GenerateName != "web-" {
		t.Errorf("namespace %q, generateName %q", job.Namespace, job.GenerateName)
	}
	if job.Labels["team"] != "a" || job.Labels["tier"] != "own" {
		t.Errorf("labels = %v: the owner's are added, the child's own win", job.Labels)
	}
	if l := job.Spec.JobTemplate.Spec.Template.Labels; l["team"] != "a" || l["pod"] != "yes" {
		t.Errorf("pod template labels = %v", l)
	}
	ref := job.OwnerReferences[0]
	if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference = %+v", ref)
	}
	if err := objects.Adopt(owner, job); err != nil || len(job.OwnerReferences) != 1 {
		t.Errorf("adopting twice: %v, %d references", err, len(job.OwnerReferences))
	}

	other := owner.DeepCopy()
	other.UID, other.Name = "u2", "other"
	if err := objects.Adopt(other, job); err == nil || !strings.Contains(err.Error(), "already controlled") {
		t.Errorf("stealing a child: %v", err)
	}
}

func TestAdoptWorksOnUnstructuredChildrenAndNeedsTheOwnersKind(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns", UID: "u"}}
	child := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{}}}}}
	if err := objects.Adopt(owner, child); err == nil {
		t.Error("an owner without apiVersion/kind was accepted")
	}
	owner.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	owner.Labels = map[string]string{"app": "x"}
	if err := objects.Adopt(owner, child); err != nil {
		t.Fatal(err)
	}
	labels, _, _ := unstructured.NestedStringMap(child.Object, "spec", "template", "metadata", "labels")
	if child.GetNamespace() != "ns" || child.GetName() != "d" || labels["app"] != "x" {
		t.Errorf("child = %v", child.Object)
	}
}
