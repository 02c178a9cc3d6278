package operator

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestSelectorsChooseWatchableServedKindsWithoutHandlersOfTheirOwn(t *testing.T) {
	watchable := []string{"get", "list", "watch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "a.gopf.dev/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Verbs: watchable, Categories: []string{"gadgets"}},
			{Name: "widgets/status", Kind: "Widget", Verbs: []string{"get", "patch"}, Categories: []string{"gadgets"}},
			{Name: "gizmos", Kind: "Gizmo", Verbs: watchable},
			{Name: "reviews", Kind: "Review", Verbs: []string{"create"}, Categories: []string{"gadgets"}},
		}},
		{GroupVersion: "b.gopf.dev/v2", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Verbs: watchable, Categories: []string{"gadgets", "all"}},
		}},
		{GroupVersion: "c.gopf.dev/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Verbs: watchable, Categories: []string{"gadgets"}},
		}},
	}
	byCategory := &contract.Handler{Options: spec.Options{Kinds: &spec.KindSelector{Category: "gadgets"}}}
	byGroup := &contract.Handler{Options: spec.Options{Kinds: &spec.KindSelector{Match: func(gvk schema.GroupVersionKind) bool {
		return gvk.Group == "a.gopf.dev"
	}}}}
	explicit := map[schema.GroupKind]bool{{Group: "c.gopf.dev", Kind: "Widget"}: true}

	got := choose(lists, []*contract.Handler{byCategory, byGroup}, explicit)

	want := map[schema.GroupVersionKind][]*contract.Handler{
		{Group: "a.gopf.dev", Version: "v1", Kind: "Widget"}: {byCategory, byGroup},
		{Group: "a.gopf.dev", Version: "v1", Kind: "Gizmo"}:  {byGroup},
		{Group: "b.gopf.dev", Version: "v2", Kind: "Widget"}: {byCategory},
	}
	if len(got) != len(want) {
		t.Fatalf("chose %v, want %v", slices.Collect(maps.Keys(got)), slices.Collect(maps.Keys(want)))
	}
	for gvk, hs := range want {
		if !slices.Equal(got[gvk], hs) {
			t.Errorf("%s: chosen by %v, want %v", gvk, got[gvk], hs)
		}
	}
}
