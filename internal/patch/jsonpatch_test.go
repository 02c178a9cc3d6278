package patch

import (
	"encoding/json"
	"testing"

	"github.com/gopf-dev/gopf/internal/state"
)

func TestJSONPatchOpsAppendRemoveAndReplaceAsKopfsTransformationsNeed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string
		want     string
	}{
		{"nothing changed", `{"a":[1,2]}`, `{"a":[1,2]}`, `null`},
		{"items appended to a list", `{"l":[1]}`, `{"l":[1,2,{"x":3}]}`,
			`[{"op":"add","path":"/l/-","value":2},{"op":"add","path":"/l/-","value":{"x":3}}]`},
		{"items removed from a list, highest index first", `{"l":["a","b","c","d"]}`, `{"l":["b","d"]}`,
			`[{"op":"remove","path":"/l/2"},{"op":"remove","path":"/l/0"}]`},
		{"a reordered list is replaced", `{"l":[1,2]}`, `{"l":[2,1]}`,
			`[{"op":"replace","path":"/l","value":[2,1]}]`},
		{"a list that lost and gained items is replaced", `{"l":[1,2]}`, `{"l":[2,3]}`,
			`[{"op":"replace","path":"/l","value":[2,3]}]`},
		{"keys added, removed and changed", `{"m":{"a":1,"b":2}}`, `{"m":{"b":3,"c":null}}`,
			`[{"op":"remove","path":"/m/a"},{"op":"replace","path":"/m/b","value":3},{"op":"add","path":"/m/c","value":null}]`},
		{"keys escaped as JSON pointers", `{"labels":{}}`, `{"labels":{"app.kubernetes.io/name":"x","a~b":"y"}}`,
			`[{"op":"add","path":"/labels/app.kubernetes.io~1name","value":"x"},{"op":"add","path":"/labels/a~0b","value":"y"}]`},
		{"false and zero are values, not omitted", `{}`, `{"f":false,"z":0}`,
			`[{"op":"add","path":"/f","value":false},{"op":"add","path":"/z","value":0}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(state.JSONPatchOps(nil, "", state.DecodeJSON(tc.from), state.DecodeJSON(tc.to)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("ops =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
