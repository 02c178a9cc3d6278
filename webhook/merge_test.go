package webhook

import (
	"testing"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestApplyChangesCarriesOnlyTheHandlersChanges(t *testing.T) {
	cases := []struct{ name, doc, before, after, want string }{
		{
			"unknown fields stay",
			`{"spec":{"a":1,"unknown":"x"},"extra":[1,2]}`,
			`{"spec":{"a":1}}`,
			`{"spec":{"a":2}}`,
			`{"extra":[1,2],"spec":{"a":2,"unknown":"x"}}`,
		},
		{
			"fields the Go type adds are not sent",
			`{"metadata":{"name":"x"}}`,
			`{"metadata":{"name":"x","creationTimestamp":null},"status":{}}`,
			`{"metadata":{"name":"x","creationTimestamp":null,"labels":{"a":"b"}},"status":{}}`,
			`{"metadata":{"labels":{"a":"b"},"name":"x"}}`,
		},
		{
			"removals",
			`{"spec":{"a":1,"b":2}}`,
			`{"spec":{"a":1,"b":2}}`,
			`{"spec":{"a":1}}`,
			`{"spec":{"a":1}}`,
		},
		{
			"list items keep their unknown fields",
			`{"items":[{"name":"a","x":1},{"name":"b","x":2}]}`,
			`{"items":[{"name":"a"},{"name":"b"}]}`,
			`{"items":[{"name":"a"},{"name":"c"}]}`,
			`{"items":[{"name":"a","x":1},{"name":"c","x":2}]}`,
		},
		{
			"a list of another length is replaced",
			`{"items":[1,2]}`,
			`{"items":[1,2]}`,
			`{"items":[1,2,3]}`,
			`{"items":[1,2,3]}`,
		},
	}
	for _, c := range cases {
		got, err := applyChanges([]byte(c.doc), []byte(c.before), []byte(c.after))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMergePatchSetsAndRemovesFieldsAndStatus(t *testing.T) {
	var p handlers.Patch
	if err := p.Set("spec.replicas", 3); err != nil {
		t.Fatal(err)
	}
	p.SetLabel("old", nil)
	p.SetStatus("phase", "Pending")
	got, err := mergePatch([]byte(`{"metadata":{"labels":{"old":"x","keep":"y"}},"spec":{"replicas":1,"image":"i"}}`), (*spec.Patch)(&p))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"labels":{"keep":"y"}},"spec":{"image":"i","replicas":3},"status":{"phase":"Pending"}}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
