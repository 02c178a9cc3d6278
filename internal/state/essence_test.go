package state

import (
	"encoding/json"
	"reflect"
	"testing"
)

// essenceJSON is the essence of obj as gopf stores it: compact JSON, keys
// sorted.
func essenceJSON(t *testing.T, obj map[string]any, prefix string, extra [][]string) string {
	t.Helper()
	data, err := Marshal(Essence(obj, prefix, extra))
	if err != nil {
		t.Fatalf("encoding the essence: %v", err)
	}
	return string(data)
}

// FromJSON decodes a JSON object written in a test.
func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad JSON in the test: %v\n%s", err, s)
	}
	return m
}

func TestEssenceKeepsWhatHandlersCareAboutAndDropsTheRest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		obj    string
		prefix string // gopf.dev when empty
		extra  [][]string
		want   string
	}{{
		name: "spec and every other top-level field are kept",
		obj:  `{"spec":{"field":"value"},"data":{"k":"v"},"items":[1,2]}`,
		want: `{"data":{"k":"v"},"items":[1,2],"spec":{"field":"value"}}`,
	}, {
		name: "apiVersion, kind and status are dropped",
		obj:  `{"apiVersion":"kopf.dev/v1","kind":"KopfExample","spec":{"a":1},"status":{"create_fn":{"message":"hi"},"gopf":{"lastHandled":"{}"}}}`,
		want: `{"spec":{"a":1}}`,
	}, {
		name: "metadata other than labels and annotations is dropped",
		obj: `{"metadata":{"name":"x","namespace":"ns","uid":"u-1","resourceVersion":"42","generation":3,
			"creationTimestamp":"2026-01-01T00:00:00Z","deletionTimestamp":"2026-01-02T00:00:00Z","deletionGracePeriodSeconds":0,
			"finalizers":["gopf.dev/finalizer"],"ownerReferences":[{"name":"owner"}],"managedFields":[{"manager":"kubectl"}],
			"labels":{"app":"a"}},"spec":{}}`,
		want: `{"metadata":{"labels":{"app":"a"}},"spec":{}}`,
	}, {
		name: "annotations under gopf's prefix are dropped, others kept",
		obj: `{"metadata":{"annotations":{"mine":"kept","gopf.dev/last-handled-configuration":"{}","gopf.dev/progress":"{}",
			"gopf.devious/not-ours":"kept","sub.gopf.dev/not-ours":"kept","gopf.dev":"kept"}}}`,
		want: `{"metadata":{"annotations":{"gopf.dev":"kept","gopf.devious/not-ours":"kept","mine":"kept","sub.gopf.dev/not-ours":"kept"}}}`,
	}, {
		name:   "the prefix is the operator's, not always gopf.dev",
		obj:    `{"metadata":{"annotations":{"example.com/progress":"{}","gopf.dev/progress":"kept"}}}`,
		prefix: "example.com",
		want:   `{"metadata":{"annotations":{"gopf.dev/progress":"kept"}}}`,
	}, {
		name: "kubectl's last-applied configuration is dropped",
		obj:  `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{}}","note":"kept"}},"spec":{}}`,
		want: `{"metadata":{"annotations":{"note":"kept"}},"spec":{}}`,
	}, {
		name: "Kopf's annotations are Kopf's state and left out, as Kopf leaves them out",
		obj:  `{"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"{\"spec\":{}}\n","kopf.zalando.org/create_fn":"{}","ops.example.com/kopf-managed":"yes","ops.example.com/x":"{}","other":"kept"}}}`,
		want: `{"metadata":{"annotations":{"other":"kept"}}}`,
	}, {
		name: "empty labels and annotations leave no metadata",
		obj:  `{"metadata":{"name":"x","labels":{},"annotations":{}},"spec":{}}`,
		want: `{"spec":{}}`,
	}, {
		name: "annotations that are all gopf's or kubectl's leave no metadata",
		obj:  `{"metadata":{"annotations":{"gopf.dev/progress":"{}","kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{}}`,
		want: `{"spec":{}}`,
	}, {
		name: "an object of metadata and status only has an empty essence",
		obj:  `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"status":{"phase":"Running"}}`,
		want: `{}`,
	}, {
		name: "malformed metadata is ignored, not fatal",
		obj:  `{"metadata":"not a map","spec":{"a":1}}`,
		want: `{"spec":{"a":1}}`,
	}, {
		name: "labels and annotations that are not maps are ignored",
		obj:  `{"metadata":{"labels":["a"],"annotations":"b"},"spec":{"a":1}}`,
		want: `{"spec":{"a":1}}`,
	}, {
		name:  "status fields that field handlers name are kept",
		obj:   `{"spec":{"a":1},"status":{"phase":"Running","other":"x"}}`,
		extra: [][]string{{"status", "phase"}},
		want:  `{"spec":{"a":1},"status":{"phase":"Running"}}`,
	}, {
		name:  "named fields the object lacks are not added",
		obj:   `{"spec":{"a":1},"status":{"phase":"Running"}}`,
		extra: [][]string{{"status", "missing"}, {"status", "phase", "deeper"}, {"nowhere", "at", "all"}},
		want:  `{"spec":{"a":1}}`,
	}, {
		name:  "a named field that is null is kept as null",
		obj:   `{"spec":{},"status":{"phase":null}}`,
		extra: [][]string{{"status", "phase"}},
		want:  `{"spec":{},"status":{"phase":null}}`,
	}, {
		name:  "a named field already in the essence is kept once, as it is",
		obj:   `{"spec":{"a":{"b":1}},"status":{"x":2}}`,
		extra: [][]string{{"spec", "a"}, {"spec", "a", "b"}, {"status", "x"}},
		want:  `{"spec":{"a":{"b":1}},"status":{"x":2}}`,
	}, {
		name:  "named fields of the same parent are kept together",
		obj:   `{"status":{"a":1,"b":2,"c":3}}`,
		extra: [][]string{{"status", "a"}, {"status", "c"}},
		want:  `{"status":{"a":1,"c":3}}`,
	}, {
		name:  "a whole status can be named",
		obj:   `{"status":{"a":1,"b":{"c":2}}}`,
		extra: [][]string{{"status"}},
		want:  `{"status":{"a":1,"b":{"c":2}}}`,
	}, {
		name:  "named metadata fields join labels and annotations",
		obj:   `{"metadata":{"generation":2,"labels":{"app":"a"}}}`,
		extra: [][]string{{"metadata", "generation"}},
		want:  `{"metadata":{"generation":2,"labels":{"app":"a"}}}`,
	}, {
		name:  "a named field is kept as the essence has it, not as the object has it",
		obj:   `{"metadata":{"annotations":{"gopf.dev/progress":"{}","kubectl.kubernetes.io/last-applied-configuration":"{}","k":"v"}}}`,
		extra: [][]string{{"metadata", "annotations"}},
		want:  `{"metadata":{"annotations":{"k":"v"}}}`,
	}, {
		name:  "a named annotation of gopf's own is kept",
		obj:   `{"metadata":{"annotations":{"gopf.dev/x":"y","other":"z"}}}`,
		extra: [][]string{{"metadata", "annotations", "gopf.dev/x"}},
		want:  `{"metadata":{"annotations":{"gopf.dev/x":"y","other":"z"}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.prefix
			if prefix == "" {
				prefix = "gopf.dev"
			}
			if got := essenceJSON(t, fromJSON(t, tc.obj), prefix, tc.extra); got != tc.want {
				t.Errorf("essence =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestEssenceLeavesTheObjectAsItWas(t *testing.T) {
	obj := fromJSON(t, `{"apiVersion":"v1","kind":"X","metadata":{"name":"x","labels":{"a":"1"},
		"annotations":{"gopf.dev/progress":"{}","kubectl.kubernetes.io/last-applied-configuration":"{}","k":"v"}},
		"spec":{"list":[{"a":1}]},"status":{"phase":"Running","other":1}}`)
	before := DeepCopyJSON(obj)
	Essence(obj, "gopf.dev", [][]string{{"status", "phase"}, {"metadata", "name"}})
	if !reflect.DeepEqual(obj, before) {
		t.Errorf("essence changed its input:\n %v\nwas\n %v", obj, before)
	}
}

func TestEssenceSharesNothingWithTheObject(t *testing.T) {
	// Each case changes one part of the essence in place and checks that
	// the object did not change with it, and the other way round.
	const source = `{"metadata":{"labels":{"app":"a"},"annotations":{"k":"v"}},
		"spec":{"items":["a"],"nested":{"m":{"x":1}}},"status":{"phase":{"name":"Running"}}}`
	extra := [][]string{{"status", "phase"}}
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
	}{
		{"a list element", func(m map[string]any) { m["spec"].(map[string]any)["items"].([]any)[0] = "changed" }},
		{"a nested map", func(m map[string]any) {
			m["spec"].(map[string]any)["nested"].(map[string]any)["m"].(map[string]any)["x"] = 2.0
		}},
		{"the labels", func(m map[string]any) { m["metadata"].(map[string]any)["labels"].(map[string]any)["app"] = "b" }},
		{"the annotations", func(m map[string]any) {
			m["metadata"].(map[string]any)["annotations"].(map[string]any)["k"] = "w"
		}},
		{"a named status field", func(m map[string]any) {
			m["status"].(map[string]any)["phase"].(map[string]any)["name"] = "Failed"
		}},
	} {
		t.Run("changing "+tc.name+" of the essence", func(t *testing.T) {
			obj := fromJSON(t, source)
			e := Essence(obj, "gopf.dev", extra)
			tc.change(e)
			if !reflect.DeepEqual(obj, fromJSON(t, source)) {
				t.Errorf("the object changed with its essence: %v", obj)
			}
		})
		t.Run("changing "+tc.name+" of the object", func(t *testing.T) {
			obj := fromJSON(t, source)
			e := Essence(obj, "gopf.dev", extra)
			want := DeepCopyJSON(e)
			tc.change(obj)
			if !reflect.DeepEqual(e, want) {
				t.Errorf("the essence changed with its object: %v", e)
			}
		})
	}
}

func TestDeepCopyJSONCopiesMapsAndListsAtEveryDepth(t *testing.T) {
	orig := map[string]any{"l": []any{map[string]any{"a": []any{1.0}}}, "s": "x", "n": nil}
	c := DeepCopyJSON(orig).(map[string]any)
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("copy = %v, want %v", c, orig)
	}
	c["l"].([]any)[0].(map[string]any)["a"].([]any)[0] = 2.0
	c["s"] = "y"
	if got := orig["l"].([]any)[0].(map[string]any)["a"].([]any)[0]; got != 1.0 {
		t.Errorf("changing the copy changed the original: %v", got)
	}
	if orig["s"] != "x" {
		t.Errorf("changing the copy's scalar changed the original: %v", orig["s"])
	}
}

// The sharding labels say which replica handles an object; moving it to
// another is not a change its handlers should see.
func TestEssenceLeavesOutTheShardingLabels(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{
			"app": "web",
			"shard.alpha.sharding.timebertt.dev/ring-a": "shard-1",
			"drain.alpha.sharding.timebertt.dev/ring-a": "true",
		}},
		"spec": map[string]any{"field": "x"},
	}
	want := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": map[string]any{"field": "x"}}
	if got := Essence(obj, "gopf.dev", nil); !reflect.DeepEqual(got, want) {
		t.Errorf("Essence = %v, want %v", got, want)
	}
	delete(obj["metadata"].(map[string]any)["labels"].(map[string]any), "app")
	if got := Essence(obj, "gopf.dev", nil); got["metadata"] != nil {
		t.Errorf("an object with only sharding labels has labels in its essence: %v", got["metadata"])
	}
}
