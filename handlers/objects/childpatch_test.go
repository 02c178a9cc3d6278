package objects_test

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/handlers/objects"
)

// page is an object as the API server's decoder hands it to an unstructured
// handler: integers as int64, objects as map[string]any, lists as []any.
func page() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pages.example.com/v1",
		"kind":       "Webpage",
		"metadata": map[string]any{
			"name":   "home",
			"labels": map[string]any{"app.kubernetes.io/name": "site"},
		},
		"spec": map[string]any{
			"title":    "Home",
			"replicas": int64(3),
			"big":      int64(1<<62 + 1),
			"ratio":    0.5,
			"tags":     []any{"a", "b"},
			"empty":    nil,
		},
		"status": map[string]any{"create_page": map[string]any{"configMap": "home"}},
	}}
}

func TestDecodeReadsFieldsIntoTheGoTypeAsked(t *testing.T) {
	obj := page()
	type pageSpec struct {
		Title    string   `json:"title"`
		Replicas int32    `json:"replicas"`
		Tags     []string `json:"tags"`
	}
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%s = %s, want %s", name, g, w)
		}
	}
	title, err := objects.Decode[string](obj, "spec.title")
	check("title", title, "Home", err)
	replicas, err := objects.Decode[int32](obj, "spec.replicas")
	check("replicas", replicas, int32(3), err)
	big, err := objects.Decode[int64](obj, "spec.big")
	check("big", big, int64(1<<62+1), err)
	ratio, err := objects.Decode[float64](obj, "spec.ratio")
	check("ratio", ratio, 0.5, err)
	spec, err := objects.Decode[pageSpec](obj, "spec")
	check("spec", spec, pageSpec{Title: "Home", Replicas: 3, Tags: []string{"a", "b"}}, err)
	name, err := objects.Decode[string](obj, []string{"metadata", "labels", "app.kubernetes.io/name"})
	check("label", name, "site", err)
	cm, err := objects.Decode[string](obj, "status.create_page.configMap")
	check("status", cm, "home", err)

	// Results and Cause.Old/New are decoded JSON without an object around them.
	var result any = map[string]any{"configMap": "home", "keys": int64(2)}
	whole, err := objects.Decode[struct{ ConfigMap string }](result, "")
	check("whole result", whole, struct{ ConfigMap string }{"home"}, err)
	keys, err := objects.Decode[int](result, "keys")
	check("result field", keys, 2, err)
	scalar, err := objects.Decode[int](int64(7), "")
	check("scalar", scalar, 7, err)

	// A typed object works as well, through its JSON.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	node, err := objects.Decode[string](pod, "spec.nodeName")
	check("typed", node, "node-1", err)
}

func TestDecodeGivesTheZeroValueForAbsentFields(t *testing.T) {
	obj := page()
	for _, path := range []string{"spec.missing", "spec.empty", "nothing.at.all", "status.other.configMap"} {
		got, err := objects.Decode[string](obj, path)
		if err != nil || got != "" {
			t.Errorf("Decode[string](%q) = %q, %v; want \"\", nil", path, got, err)
		}
		ptr, err := objects.Decode[*int64](obj, path)
		if err != nil || ptr != nil {
			t.Errorf("Decode[*int64](%q) = %v, %v; want nil, nil", path, ptr, err)
		}
	}
	// A pointer tells a present zero from an absent field.
	obj.Object["spec"].(map[string]any)["zero"] = int64(0)
	ptr, err := objects.Decode[*int64](obj, "spec.zero")
	if err != nil || ptr == nil || *ptr != 0 {
		t.Errorf("Decode[*int64](spec.zero) = %v, %v; want a pointer to 0", ptr, err)
	}
	var nothing *unstructured.Unstructured
	if got, err := objects.Decode[string](nothing, "spec.title"); err != nil || got != "" {
		t.Errorf("Decode of a nil object = %q, %v; want \"\", nil", got, err)
	}
}

func TestDecodeNamesThePathOfWhatDoesNotFit(t *testing.T) {
	obj := page()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"wrong type", second(objects.Decode[int](obj, "spec.title")), `decode "spec.title": json: cannot unmarshal string`},
		{"fraction into an integer", second(objects.Decode[int](obj, "spec.ratio")), `decode "spec.ratio": json: cannot unmarshal number 0.5`},
		{"through a string", second(objects.Decode[string](obj, "spec.title.text")), `decode "spec.title.text": "spec.title" is a string, not an object`},
		{"through a list", second(objects.Decode[string](obj, "spec.tags.first")), `"spec.tags" is a list, not an object`},
		{"into a scalar value", second(objects.Decode[string](int64(1), "spec")), `decode "spec": the value is a number, not an object`},
		{"empty segment", second(objects.Decode[string](obj, "spec..title")), `decode: field "spec..title" has an empty segment`},
		{"label key with dots", second(objects.Decode[string](obj, "metadata.labels.app.kubernetes.io/name")), `give the path as keys`},
		{"empty key", second(objects.Decode[string](obj, []string{"spec", ""})), `empty key at position 1`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func TestChildPatchIsAMergePatchOfTheFieldsSet(t *testing.T) {
	theme, gone := "dark", (*string)(nil)
	patch := objects.NewChildPatch().
		Set("spec.replicas", int32(2)).
		Set("spec.template", map[string]string{"image": "nginx"}).
		Set("spec.template.tag", "1.27"). // merges into the map set before
		Set("spec.paused", nil).          // removes the field
		SetKeys([]string{"data", "index.html"}, "Home page").
		SetLabel("app.kubernetes.io/name", &theme).
		SetLabel("old", gone).
		SetAnnotation("example.com/theme", &theme).
		Set("status.phase", "Ready")
	if patch.Type() != types.MergePatchType {
		t.Errorf("Type() = %q, want %q", patch.Type(), types.MergePatchType)
	}
	got := data(t, patch)
	want := `{"data":{"index.html":"Home page"},` +
		`"metadata":{"annotations":{"example.com/theme":"dark"},"labels":{"app.kubernetes.io/name":"dark","old":null}},` +
		`"spec":{"paused":null,"replicas":2,"template":{"image":"nginx","tag":"1.27"}},` +
		`"status":{"phase":"Ready"}}`
	if got != want {
		t.Errorf("Data() =\n%s\nwant\n%s", got, want)
	}
}

func TestChildPatchCopiesValuesWhenTheyAreSet(t *testing.T) {
	labels := map[string]string{"team": "web"}
	var zero objects.ChildPatch // the zero value is ready for use
	patch := zero.Set("metadata.labels", labels)
	labels["team"] = "changed later"
	if got, want := data(t, patch), `{"metadata":{"labels":{"team":"web"}}}`; got != want {
		t.Errorf("Data() = %s, want %s", got, want)
	}
	big := objects.NewChildPatch().Set("spec.big", int64(1<<62+1))
	if got, want := data(t, big), `{"spec":{"big":4611686018427387905}}`; got != want {
		t.Errorf("Data() = %s, want %s (exact)", got, want)
	}
}

func TestAnEmptyChildPatchIsAnEmptyObject(t *testing.T) {
	if got := data(t, objects.NewChildPatch()); got != "{}" {
		t.Errorf("Data() = %s, want {}", got)
	}
}

func TestChildPatchReportsItsFirstBadChangeFromData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch *objects.ChildPatch
		want  string
	}{
		{"empty path", objects.NewChildPatch().Set("", 1), `child patch: Set(""): field "" has an empty segment`},
		{"empty segment", objects.NewChildPatch().Set("spec..replicas", 1), `child patch: Set("spec..replicas"): field "spec..replicas" has an empty segment`},
		{"label key with dots", objects.NewChildPatch().Set("metadata.labels.app.kubernetes.io/name", "x"), "label values are strings, with no keys inside; for a key with dots use SetLabel or SetAnnotation"},
		{"no keys", objects.NewChildPatch().SetKeys(nil, 1), "child patch: SetKeys([]): the field path is empty"},
		{"empty label key", objects.NewChildPatch().SetLabel("", nil), `child patch: SetKeys(["metadata" "labels" ""]): field ["metadata" "labels" ""] has an empty key at position 2`},
		{"no JSON", objects.NewChildPatch().Set("spec.fn", func() {}), `child patch: set "spec.fn": json: unsupported type: func()`},
		{"the first one", objects.NewChildPatch().Set("a..b", 1).Set("spec.fn", func() {}).Set("spec.ok", 1), `Set("a..b")`},
	} {
		got, err := tc.patch.Data(nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("%s: Data() = %s, %v; want no data and an error containing %q", tc.name, got, err, tc.want)
		}
	}
}

func data(t *testing.T, p *objects.ChildPatch) string {
	t.Helper()
	b, err := p.Data(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func second[V any](_ V, err error) error { return err }
