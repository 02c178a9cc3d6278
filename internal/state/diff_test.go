package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/internal/spec"
)

// JsonValue decodes a JSON value written in a test; "" stands for nothing
// (nil), as an absent essence.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	v := DecodeJSON(s)
	if v == nil && s != "null" {
		t.Fatalf("bad JSON in the test: %s", s)
	}
	return v
}

func TestDiffListsEachChangeOnceByPath(t *testing.T) {
	add, change, remove := spec.DiffAdd, spec.DiffChange, spec.DiffRemove
	item := func(op spec.DiffOp, path string, old, new any) spec.DiffItem {
		var p []string
		if path != "" {
			p = strings.Split(path, ".")
		}
		return spec.DiffItem{Op: op, Path: p, Old: old, New: new}
	}
	for _, tc := range []struct {
		name     string
		old, new string
		want     spec.Diff
	}{{
		name: "equal maps give an empty diff",
		old:  `{"spec":{"a":1,"l":[1,{"x":"y"}],"m":{"n":null}}}`,
		new:  `{"spec":{"a":1,"l":[1,{"x":"y"}],"m":{"n":null}}}`,
	}, {
		name: "equal scalars give an empty diff",
		old:  `"x"`, new: `"x"`,
	}, {
		name: "nothing and nothing give an empty diff",
	}, {
		name: "a null field and an absent one are the same",
		old:  `{"spec":{"a":null}}`, new: `{"spec":{}}`,
	}, {
		name: "an absent field and a null one are the same",
		old:  `{"spec":{}}`, new: `{"spec":{"a":null}}`,
	}, {
		name: "an added field is an add at its path",
		old:  `{"spec":{"a":1}}`, new: `{"spec":{"a":1,"b":"new"}}`,
		want: spec.Diff{item(add, "spec.b", nil, "new")},
	}, {
		name: "a changed field is a change at its path",
		old:  `{"spec":{"a":{"b":{"c":1}}}}`, new: `{"spec":{"a":{"b":{"c":2}}}}`,
		want: spec.Diff{item(change, "spec.a.b.c", 1.0, 2.0)},
	}, {
		name: "a removed field is a remove at its path",
		old:  `{"spec":{"a":1,"gone":true}}`, new: `{"spec":{"a":1}}`,
		want: spec.Diff{item(remove, "spec.gone", true, nil)},
	}, {
		name: "a field set to null is removed",
		old:  `{"spec":{"a":1}}`, new: `{"spec":{"a":null}}`,
		want: spec.Diff{item(remove, "spec.a", 1.0, nil)},
	}, {
		name: "a null field set to a value is added",
		old:  `{"spec":{"a":null}}`, new: `{"spec":{"a":false}}`,
		want: spec.Diff{item(add, "spec.a", nil, false)},
	}, {
		name: "an added map is one add with the whole map",
		old:  `{}`, new: `{"spec":{"a":{"b":1},"c":2}}`,
		want: spec.Diff{item(add, "spec", nil, map[string]any{"a": map[string]any{"b": 1.0}, "c": 2.0})},
	}, {
		name: "a removed map is one remove with the whole map",
		old:  `{"spec":{"a":{"b":1}}}`, new: `{"spec":{}}`,
		want: spec.Diff{item(remove, "spec.a", map[string]any{"b": 1.0}, nil)},
	}, {
		name: "a list is compared as one value",
		old:  `{"spec":{"l":["a"]}}`, new: `{"spec":{"l":["a","b"]}}`,
		want: spec.Diff{item(change, "spec.l", []any{"a"}, []any{"a", "b"})},
	}, {
		name: "a reordered list is a change",
		old:  `{"l":[1,2]}`, new: `{"l":[2,1]}`,
		want: spec.Diff{item(change, "l", []any{1.0, 2.0}, []any{2.0, 1.0})},
	}, {
		name: "a change inside a list element is a change of the list",
		old:  `{"l":[{"a":1}]}`, new: `{"l":[{"a":2}]}`,
		want: spec.Diff{item(change, "l", []any{map[string]any{"a": 1.0}}, []any{map[string]any{"a": 2.0}})},
	}, {
		name: "an empty list and no list differ",
		old:  `{}`, new: `{"l":[]}`,
		want: spec.Diff{item(add, "l", nil, []any{})},
	}, {
		name: "a map replaced by a scalar is one change",
		old:  `{"spec":{"a":{"b":1}}}`, new: `{"spec":{"a":"flat"}}`,
		want: spec.Diff{item(change, "spec.a", map[string]any{"b": 1.0}, "flat")},
	}, {
		name: "a scalar replaced by a map is one change",
		old:  `{"spec":{"a":"flat"}}`, new: `{"spec":{"a":{"b":1}}}`,
		want: spec.Diff{item(change, "spec.a", "flat", map[string]any{"b": 1.0})},
	}, {
		name: "a type change of a scalar is a change",
		old:  `{"a":"1"}`, new: `{"a":1}`,
		want: spec.Diff{item(change, "a", "1", 1.0)},
	}, {
		name: "from nothing, the whole value is added at the root",
		new:  `{"spec":{"a":1}}`,
		want: spec.Diff{item(add, "", nil, map[string]any{"spec": map[string]any{"a": 1.0}})},
	}, {
		name: "to nothing, the whole value is removed at the root",
		old:  `{"spec":{"a":1}}`,
		want: spec.Diff{item(remove, "", map[string]any{"spec": map[string]any{"a": 1.0}}, nil)},
	}, {
		name: "two scalars differ at the root",
		old:  `"a"`, new: `"b"`,
		want: spec.Diff{item(change, "", "a", "b")},
	}, {
		name: "changes come sorted by key, depth first",
		old:  `{"b":1,"a":{"z":1,"y":1},"a-b":1,"c":{"x":1}}`,
		new:  `{"b":2,"a":{"z":2,"y":2},"a-b":2,"d":1}`,
		want: spec.Diff{
			item(change, "a.y", 1.0, 2.0),
			item(change, "a.z", 1.0, 2.0),
			item(change, "a-b", 1.0, 2.0),
			item(change, "b", 1.0, 2.0),
			item(remove, "c", map[string]any{"x": 1.0}, nil),
			item(add, "d", nil, 1.0),
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(jsonValue(t, tc.old), jsonValue(t, tc.new))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("diff =\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}

func TestDiffOfAnObjectWithACopyOfItselfIsEmpty(t *testing.T) {
	v := jsonValue(t, `{"metadata":{"labels":{"a":"b"}},"spec":{"l":[{"x":[1,2]}],"n":null,"s":"t","b":true,"f":1.5}}`)
	if d := Diff(v, DeepCopyJSON(v)); len(d) != 0 {
		t.Errorf("diff = %v, want none", d)
	}
}

func TestDiffItemsOwnTheirPaths(t *testing.T) {
	// Deep enough for a shared backing array to show: siblings four levels
	// down.
	d := Diff(jsonValue(t, `{"spec":{"deep":{"er":{"a":1,"b":1}}}}`), jsonValue(t, `{"spec":{"deep":{"er":{"a":2,"b":2}}}}`))
	var paths []string
	for _, item := range d {
		paths = append(paths, strings.Join(item.Path, "."))
	}
	if want := []string{"spec.deep.er.a", "spec.deep.er.b"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
	d[0].Path[3] = "changed"
	if got := strings.Join(d[1].Path, "."); got != "spec.deep.er.b" {
		t.Errorf("changing one item's path changed another's: %s", got)
	}
}

func TestDiffReadsLikeKopfs(t *testing.T) {
	d := Diff(jsonValue(t, `{"spec":{"field":"value","gone":1}}`), jsonValue(t, `{"spec":{"field":"changed","new":true}}`))
	var got []string
	for _, item := range d {
		got = append(got, item.String())
	}
	want := []string{"(change, spec.field, value, changed)", "(remove, spec.gone, 1, <nil>)", "(add, spec.new, <nil>, true)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diff =\n %q\nwant\n %q", got, want)
	}
}

func TestLookupFindsValuesByPath(t *testing.T) {
	doc := jsonValue(t, `{"spec":{"a":{"b":"c"},"n":null,"l":[{"x":1}],"s":"str"}}`)
	for _, tc := range []struct {
		name  string
		path  []string
		want  any
		found bool
	}{
		{"the empty path is the value itself", nil, doc, true},
		{"a nested field", []string{"spec", "a", "b"}, "c", true},
		{"a map", []string{"spec", "a"}, map[string]any{"b": "c"}, true},
		{"a null field is there, as nil", []string{"spec", "n"}, nil, true},
		{"a missing field is not there", []string{"spec", "missing"}, nil, false},
		{"a missing parent is not there", []string{"nope", "a"}, nil, false},
		{"below a scalar nothing is there", []string{"spec", "s", "x"}, nil, false},
		{"below a null nothing is there", []string{"spec", "n", "x"}, nil, false},
		{"lists are not indexed", []string{"spec", "l", "0"}, nil, false},
		{"keys are not split at dots", []string{"spec.a"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := Lookup(doc, tc.path)
			if found != tc.found || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lookup(%q) = %v, %v; want %v, %v", tc.path, got, found, tc.want, tc.found)
			}
		})
	}
	if _, found := Lookup(nil, []string{"a"}); found {
		t.Error("lookup in nothing found something")
	}
}

func TestSetPathThenLookupGivesTheValueBack(t *testing.T) {
	m := map[string]any{"status": "scalar"}
	path := []string{"status", "deep", "field"}
	spec.SetPath(m, path, []any{"x"})
	got, found := Lookup(m, path)
	if !found || !reflect.DeepEqual(got, []any{"x"}) {
		t.Errorf("lookup after SetPath = %v, %v", got, found)
	}
}
