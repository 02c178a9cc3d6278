package assign

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTheBacklogGivesEachObjectOnceInItsLatestVersionInTheOrderTheyArrived(t *testing.T) {
	b := newBacklog(kinds)
	obj := func(name, rv string, refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv,
			OwnerReferences: refs, Annotations: map[string]string{"big": "value"}}}
	}
	b.offer(configMaps, obj("first", "1"))
	b.offer(configMaps, obj("second", "2"))
	b.offer(secrets, obj("orphan", "3"))                                             // no controller: not the assigner's
	b.offer(secrets, obj("first", "4", controlledBy("v1", "ConfigMap", "first")[0])) // another kind, same name
	b.offer(configMaps, obj("gone", "5"))
	b.offer(configMaps, obj("first", "6"))
	b.forget(configMaps, obj("gone", "7"))

	var got []string
	for {
		o, ok := b.next()
		if !ok {
			break
		}
		got = append(got, o.kind.GroupKind.Kind+"/"+o.obj.Name+"@"+o.obj.ResourceVersion)
		if o.obj.Annotations != nil {
			t.Errorf("%s keeps its annotations in the backlog", o.obj.Name)
		}
	}
	want := []string{"ConfigMap/first@6", "ConfigMap/second@2", "Secret/first@4"}
	if !slices.Equal(got, want) {
		t.Errorf("the backlog gave %v, want %v", got, want)
	}
}
