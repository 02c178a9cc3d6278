package engine

import (
	"math"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

func TestAsDecodedJSONGivesWhatAJSONRoundTripGives(t *testing.T) {
	values := []any{
		nil, true, "text", "<&>", 1.5, math.Copysign(0, -1), int64(42), int64(1<<53 + 1), 7, int32(-3),
		map[string]any{"a": int64(1), "b": []any{"x", 2.5, nil, map[string]any{}}, "c": map[string]any{"d": false}},
		[]any{}, map[string]any(nil), []any(nil),
	}
	for _, v := range values {
		got, ok := state.AsDecodedJSON(v)
		if !ok {
			t.Errorf("asDecodedJSON(%#v) refused a plain JSON value", v)
			continue
		}
		data, err := state.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := state.DecodeJSON(string(data)); !reflect.DeepEqual(got, want) {
			t.Errorf("asDecodedJSON(%#v) = %#v, the round trip gives %#v", v, got, want)
		}
	}
}

func TestAsDecodedJSONRefusesWhatItCannotReproduce(t *testing.T) {
	for _, v := range []any{
		[]string{"a"}, map[string]string{"a": "b"}, struct{ A int }{1}, time.Now(), "\xff",
		map[string]any{"\xff": 1}, math.NaN(), math.Inf(1), []any{uint8(1)},
	} {
		if got, ok := state.AsDecodedJSON(v); ok {
			t.Errorf("asDecodedJSON(%#v) = %#v; want a refusal, so that the value takes the JSON round trip", v, got)
		}
	}
}

func TestAsDecodedJSONSharesNothingWithItsInput(t *testing.T) {
	in := map[string]any{"m": map[string]any{"k": "v"}, "l": []any{"a"}}
	out, _ := state.AsDecodedJSON(in)
	out.(map[string]any)["m"].(map[string]any)["k"] = "changed"
	out.(map[string]any)["l"].([]any)[0] = "changed"
	if in["m"].(map[string]any)["k"] != "v" || in["l"].([]any)[0] != "a" {
		t.Errorf("changing the copy changed the input: %v", in)
	}
}

func TestSameStateAgreesWithTheEncoding(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := []*state.State{
		nil, {}, {Essence: `{"spec":{"a":1}}`}, {Essence: `{"spec":{"a":2}}`},
		{Essence: `{}`, Progress: map[string]*state.Progress{}},
		{Essence: `{}`, Progress: map[string]*state.Progress{"h": {Reason: handlers.ReasonUpdate, Started: at}}},
		{Essence: `{}`, Progress: map[string]*state.Progress{"h": {Reason: handlers.ReasonUpdate, Started: at, Retries: 1}}},
	}
	for _, a := range states {
		for _, b := range states {
			if got, want := state.SameState(a, b), a.Encode() == b.Encode(); got != want {
				t.Errorf("sameState(%s, %s) = %v, the encodings say %v", a.Encode(), b.Encode(), got, want)
			}
		}
	}
}

func TestValidEssenceAcceptsJSONObjectsOnly(t *testing.T) {
	for essence, valid := range map[string]bool{
		`{}`: true, ` {"spec":{"a":[1,2]}}`: true, `{truncated`: false, `[]`: false, `null`: false,
		`"{}"`: false, ``: false, `{} x`: false,
	} {
		if err := state.ValidEssence(essence, "here"); (err == nil) != valid {
			t.Errorf("validEssence(%q) = %v, want valid %v", essence, err, valid)
		}
	}
}

func TestSelectedReturnsTheAcceptedHandlersInOrder(t *testing.T) {
	h := func(id, app string) *contract.Handler {
		r := &contract.Handler{}
		r.Options.ID = id
		if app != "" {
			r.Options.Labels = map[string]spec.Filter{"app": spec.Equal(app)}
		}
		return r
	}
	k := &KindController{}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}}
	ids := func(rs []*contract.Handler) (out []string) {
		for _, r := range rs {
			out = append(out, r.Options.ID)
		}
		return out
	}
	for _, c := range []struct {
		regs []*contract.Handler
		want []string
	}{
		{[]*contract.Handler{h("1", ""), h("2", "a"), h("3", "")}, []string{"1", "2", "3"}},
		{[]*contract.Handler{h("1", "b"), h("2", "a"), h("3", "b")}, []string{"2"}},
		{[]*contract.Handler{h("1", "a"), h("2", "b"), h("3", "a")}, []string{"1", "3"}},
		{[]*contract.Handler{h("1", "b")}, nil},
		{nil, nil},
	} {
		if got := ids(k.selected(c.regs, obj, nil)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("selected %v of %v, want %v", got, ids(c.regs), c.want)
		}
	}
}
