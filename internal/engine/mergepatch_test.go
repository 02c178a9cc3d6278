package engine

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/internal/state"
)

func TestApplyMergePatchFollowsRFC7386(t *testing.T) {
	// The examples of RFC 7386, appendix A, whose target is an object, and
	// a few of gopf's own.
	for _, tc := range []struct{ name, target, patch, want string }{
		{"a value is replaced", `{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{"a value is added", `{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{"null removes", `{"a":"b"}`, `{"a":null}`, `{}`},
		{"null removes only its key", `{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{"a list is replaced by a scalar", `{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{"a scalar is replaced by a list", `{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{"maps merge, nulls inside remove", `{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{"lists are replaced whole", `{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{"a null in the target stays", `{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{"nulls in a new map are left out", `{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{"a map replaces a scalar", `{"a":"flat"}`, `{"a":{"b":1,"c":null}}`, `{"a":{"b":1}}`},
		{"null for an absent key changes nothing", `{"a":1}`, `{"b":null}`, `{"a":1}`},
		{"an empty patch changes nothing", `{"a":1}`, `{}`, `{"a":1}`},
		{"labels are set, replaced and removed", `{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"x":1}}`,
			`{"metadata":{"labels":{"a":null,"c":"3"}},"spec":"replaced","new":{"k":"v"}}`,
			`{"metadata":{"labels":{"b":"2","c":"3"}},"new":{"k":"v"},"spec":"replaced"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := state.ApplyMergePatch(fromJSON(t, tc.target), fromJSON(t, tc.patch))
			if s := string(mustJSON(t, got)); s != tc.want {
				t.Errorf("%s + %s = %s, want %s", tc.target, tc.patch, s, tc.want)
			}
		})
	}
}

func TestApplyMergePatchCopiesWhatItTakesFromThePatch(t *testing.T) {
	patch := fromJSON(t, `{"l":[{"a":1}],"m":{"n":[1]}}`)
	got := state.ApplyMergePatch(map[string]any{}, patch)
	patch["l"].([]any)[0].(map[string]any)["a"] = 2.0
	patch["m"].(map[string]any)["n"].([]any)[0] = 2.0
	if s := string(mustJSON(t, got)); s != `{"l":[{"a":1}],"m":{"n":[1]}}` {
		t.Errorf("changing the patch changed the result: %s", s)
	}
}

func TestChangesTellsWhetherAMergePatchWouldChangeAnything(t *testing.T) {
	for _, tc := range []struct {
		name           string
		current, patch any
		want           bool
	}{
		{"an equal scalar", "a", "a", false},
		{"another scalar", "a", "b", true},
		{"an int and the same float", int64(3), 3.0, false},
		{"a string and the same number", "3", 3.0, true},
		{"equal maps", map[string]any{"a": 1.0}, map[string]any{"a": 1.0}, false},
		{"a patch naming some keys, all equal", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 1.0}, false},
		{"a patch naming some keys, one different", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"b": 3.0}, true},
		{"a new key", map[string]any{"a": 1.0}, map[string]any{"c": 1.0}, true},
		{"an equal nested value", map[string]any{"m": map[string]any{"a": 1.0, "b": 2.0}}, map[string]any{"m": map[string]any{"a": 1.0}}, false},
		{"a different nested value", map[string]any{"m": map[string]any{"a": 1.0}}, map[string]any{"m": map[string]any{"a": 2.0}}, true},
		{"null for an absent key", map[string]any{"a": 1.0}, map[string]any{"b": nil}, false},
		{"null for a present key", map[string]any{"a": 1.0}, map[string]any{"a": nil}, true},
		{"an empty map patch onto a map", map[string]any{"a": 1.0}, map[string]any{}, false},
		{"an empty map onto nothing", nil, map[string]any{}, true},
		{"a map onto nothing", nil, map[string]any{"a": 1.0}, true},
		{"a map onto a scalar", "flat", map[string]any{"a": 1.0}, true},
		{"a scalar onto a map", map[string]any{"a": 1.0}, "flat", true},
		{"equal lists", []any{1.0, "x"}, []any{1.0, "x"}, false},
		{"a longer list", []any{1.0}, []any{1.0, 2.0}, true},
		{"a list of maps is compared whole", []any{map[string]any{"a": 1.0, "b": 2.0}}, []any{map[string]any{"a": 1.0}}, true},
		{"nothing onto nothing", nil, nil, false},
		{"nothing onto a value", 1.0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := state.Changes(tc.current, tc.patch); got != tc.want {
				t.Errorf("changes(%v, %v) = %v, want %v", tc.current, tc.patch, got, tc.want)
			}
		})
	}
}

func TestChangesAgreesWithApplyingThePatch(t *testing.T) {
	// changes(current, patch) is true exactly when applying patch to
	// current gives another value.
	docs := []string{`{}`, `{"a":1}`, `{"a":null}`, `{"a":{"b":1}}`, `{"a":{"b":1,"c":2}}`, `{"a":[1]}`, `{"a":"x","b":true}`}
	patches := []string{`{}`, `{"a":1}`, `{"a":null}`, `{"a":{"b":1}}`, `{"a":{"b":null}}`, `{"a":{"c":2}}`, `{"a":[1]}`, `{"b":true}`, `{"c":null}`}
	for _, d := range docs {
		for _, p := range patches {
			if d == `{"a":null}` && p == `{"a":null}` {
				continue // the null key goes: a change of form only, which changes rightly ignores
			}
			t.Run(d+"+"+p, func(t *testing.T) {
				before := fromJSON(t, d)
				after := state.ApplyMergePatch(fromJSON(t, d), fromJSON(t, p))
				changed := string(mustJSON(t, before)) != string(mustJSON(t, after))
				if got := state.Changes(before, fromJSON(t, p)); got != changed {
					t.Errorf("changes = %v, but applying the patch gives %s", got, mustJSON(t, after))
				}
			})
		}
	}
}

func TestMergeIntoCombinesTwoMergePatches(t *testing.T) {
	for _, tc := range []struct{ name, dst, src, want string }{
		{"into nothing", ``, `{"a":1}`, `{"a":1}`},
		{"nothing into a patch", `{"a":1}`, ``, `{"a":1}`},
		{"nothing into nothing is an empty patch", ``, ``, `{}`},
		{"maps merge key by key", `{"m":{"a":1}}`, `{"m":{"b":2}}`, `{"m":{"a":1,"b":2}}`},
		{"the later value wins", `{"m":{"a":1}}`, `{"m":{"a":2}}`, `{"m":{"a":2}}`},
		{"a map replaces a scalar", `{"a":"x"}`, `{"a":{"b":1}}`, `{"a":{"b":1}}`},
		{"a scalar replaces a map", `{"a":{"b":1}}`, `{"a":"x"}`, `{"a":"x"}`},
		{"nulls stay, so that the patch still removes", `{"a":1,"m":{"k":"v"}}`, `{"a":null,"m":{"k":null}}`, `{"a":null,"m":{"k":null}}`},
		{"a handler's labels and gopf's annotations go together",
			`{"metadata":{"labels":{"handled":"yes"}}}`,
			`{"metadata":{"annotations":{"gopf.dev/progress":"{}"}}}`,
			`{"metadata":{"annotations":{"gopf.dev/progress":"{}"},"labels":{"handled":"yes"}}}`},
		{"status joins the object patch", `{"spec":{"a":1}}`, `{"status":{"gopf":{"lastHandled":"{}"}}}`, `{"spec":{"a":1},"status":{"gopf":{"lastHandled":"{}"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst, src map[string]any
			if tc.dst != "" {
				dst = fromJSON(t, tc.dst)
			}
			if tc.src != "" {
				src = fromJSON(t, tc.src)
			}
			got := state.MergeInto(dst, src)
			if got == nil {
				t.Fatal("mergeInto returned nil")
			}
			if s := string(mustJSON(t, got)); s != tc.want {
				t.Errorf("mergeInto(%s, %s) = %s, want %s", tc.dst, tc.src, s, tc.want)
			}
		})
	}
}

// result is a handler result as a Go type, with JSON tags.
type result struct {
	Name    string            `json:"name"`
	Count   int               `json:"count"`
	Skipped string            `json:"skipped,omitempty"`
	Tags    []string          `json:"tags"`
	Extra   map[string]uint16 `json:"extra,omitempty"`
	private int
}

// failing is a result whose JSON encoding fails.
type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no JSON for you") }

func TestToJSONValueTurnsResultsIntoPlainJSON(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"nothing", nil, nil},
		{"a string", "done", "done"},
		{"an int becomes a float64", 42, 42.0},
		{"a bool", true, true},
		{"a struct, by its JSON tags", result{Name: "x", Count: 2, Tags: []string{"a"}, Extra: map[string]uint16{"k": 7}, private: 9},
			map[string]any{"name": "x", "count": 2.0, "tags": []any{"a"}, "extra": map[string]any{"k": 7.0}}},
		{"a pointer to a struct", &result{Name: "p"}, map[string]any{"name": "p", "count": 0.0, "tags": nil}},
		{"a typed map", map[string]int{"a": 1}, map[string]any{"a": 1.0}},
		{"a typed list", []string{"a", "b"}, []any{"a", "b"}},
		{"a time, as RFC 3339", when, "2026-01-02T03:04:05Z"},
		{"raw JSON", json.RawMessage(`{"a":[1,null]}`), map[string]any{"a": []any{1.0, nil}}},
		{"HTML characters, unescaped", map[string]string{"m": "<a>&"}, map[string]any{"m": "<a>&"}},
		{"a JSON-like map, as it is", map[string]any{"m": map[string]any{"l": []any{"x"}}}, map[string]any{"m": map[string]any{"l": []any{"x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := toJSONValue(tc.in)
			if err != nil {
				t.Fatalf("toJSONValue: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("toJSONValue = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestToJSONValueRefusesWhatJSONCannotHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
	}{
		{"a channel", make(chan int)},
		{"a function", func() {}},
		{"NaN", math.NaN()},
		{"infinity inside a map", map[string]any{"a": math.Inf(-1)}},
		{"a map with non-string keys of a struct type", map[struct{ A int }]int{{1}: 1}},
		{"a failing MarshalJSON", failing{}},
		{"a failing MarshalJSON inside a list", []any{"ok", failing{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := toJSONValue(tc.in); err == nil {
				t.Errorf("toJSONValue = %#v, want an error", got)
			}
		})
	}
}

func TestHasStatusFieldTellsWhetherTheFieldIsThereAtAll(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
		want bool
	}{
		{"no status", `{"spec":{}}`, false},
		{"status without the field", `{"status":{"phase":"x"}}`, false},
		{"the field as an object", `{"status":{"gopf":{"lastHandled":"{}"}}}`, true},
		{"the field as an empty object", `{"status":{"gopf":{}}}`, true},
		{"the field as null", `{"status":{"gopf":null}}`, true},
		{"the field as a string", `{"status":{"gopf":"x"}}`, true},
		{"status that is not an object", `{"status":"gopf"}`, false},
		{"the field elsewhere", `{"spec":{"gopf":{}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := state.HasStatusField(fromJSON(t, tc.obj), "gopf"); got != tc.want {
				t.Errorf("hasStatusField = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSameJSONComparesEncodings(t *testing.T) {
	ch := make(chan int)
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"equal maps", map[string]any{"a": 1.0, "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": 1.0}, true},
		{"an int and the same float", int64(1), 1.0, true},
		{"a typed and a JSON-like map", map[string]int{"a": 1}, map[string]any{"a": 1.0}, true},
		{"a number and a string", 1.0, "1", false},
		{"nothing and nothing", nil, nil, true},
		{"nothing and an empty map", nil, map[string]any{}, false},
		{"nothing and an empty list", nil, []any{}, false},
		{"lists in another order", []any{1.0, 2.0}, []any{2.0, 1.0}, false},
		{"values JSON cannot encode are never the same", ch, ch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := state.SameJSON(tc.a, tc.b); got != tc.want {
				t.Errorf("sameJSON(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestDecodeJSONGivesNothingForAnythingButOneJSONValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`{"a":[1,"x",null,true]}`, map[string]any{"a": []any{1.0, "x", nil, true}}},
		{`3`, 3.0},
		{`"s"`, "s"},
		{` {"a":1} `, map[string]any{"a": 1.0}},
		{`null`, nil},
		{``, nil},
		{`{"a":`, nil},
		{`{"a":1} {"b":2}`, nil},
		{`{a:1}`, nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := state.DecodeJSON(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decodeJSON(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestJSONMarshalIsCompactUnescapedAndSorted(t *testing.T) {
	got, err := state.Marshal(map[string]any{"b": "<a href=\"x\">&</a>", "a": []any{1.0, "ü"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,"ü"],"b":"<a href=\"x\">&</a>"}`; string(got) != want {
		t.Errorf("jsonMarshal = %s, want %s", got, want)
	}
}
