package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/state"
)

// bigObject is an object whose spec holds n bytes, with its essence.
func bigObject(n int, replicas int) (map[string]any, string, any) {
	obj := map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "big", "namespace": "ns"},
		"spec":     map[string]any{"field": strings.Repeat("x", n), "replicas": float64(replicas)},
	}
	data, _ := state.Marshal(state.Essence(obj, "gopf.dev", nil))
	return obj, string(data), state.DecodeJSON(string(data))
}

func TestCompactEssenceKeepsADigestAndTheNamedFieldsOnly(t *testing.T) {
	paths := [][]string{{"spec", "replicas"}, {"spec", "absent"}}
	_, full, tree := bigObject(1000, 3)
	text, compact := state.CompactEssence(full, tree, paths)
	if !state.IsCompact(text) || state.IsCompact(full) {
		t.Fatalf("isCompact: compact %t, full %t", state.IsCompact(text), state.IsCompact(full))
	}
	if got, _ := state.Lookup(compact, []string{"spec", "replicas"}); got != float64(3) {
		t.Errorf("the named field is %v, want 3", got)
	}
	if _, ok := state.Lookup(compact, []string{"spec", "field"}); ok {
		t.Error("a field no handler names is kept")
	}
	if len(text) > 200 {
		t.Errorf("the compact form is %d bytes: %s", len(text), text)
	}
	again, _ := state.CompactEssence(full, tree, paths)
	_, other, otherTree := bigObject(1001, 3)
	changed, changedTree := state.CompactEssence(other, otherTree, paths)
	if again != text || changed == text {
		t.Errorf("the same essence must give the same form and another a different one:\n%s\n%s\n%s", text, again, changed)
	}
	// The diff of two compact forms names the digest, not the spec.
	var diffPaths []string
	for _, d := range state.Diff(compact, changedTree) {
		diffPaths = append(diffPaths, strings.Join(d.Path, "."))
	}
	if fmt.Sprint(diffPaths) != "[$gopf.bytes $gopf.digest]" {
		t.Errorf("diff paths %v", diffPaths)
	}
}

func TestAnEssenceWithAFieldNamedBeforeTheDigestIsStillCompact(t *testing.T) {
	// Keys that sort before "$" must not push the digest from the front.
	tree := map[string]any{"!odd": "v", "spec": map[string]any{"a": 1.0}}
	full, _ := state.Marshal(tree)
	text, _ := state.CompactEssence(string(full), state.DecodeJSON(string(full)), [][]string{{"!odd"}})
	if !state.IsCompact(text) || !strings.Contains(text, `"!odd":"v"`) {
		t.Errorf("compact form %s", text)
	}
	if state.DecodeJSON(text) == nil {
		t.Errorf("not JSON: %s", text)
	}
}

// sizeTurn is a turn over obj whose state is about to be saved as st.
func sizeTurn(obj map[string]any, st *state.State, loaded *state.State) *turn {
	return &turn{
		k:      &KindController{extra: [][]string{{"spec", "replicas"}}},
		log:    logr.Discard(),
		raw:    obj,
		store:  state.StatusStorage{Field: "gopf"},
		st:     st,
		loaded: loaded,
	}
}

func TestStateOfASmallObjectIsKeptInFull(t *testing.T) {
	obj, full, _ := bigObject(1000, 1)
	tr := sizeTurn(obj, &state.State{Essence: full}, nil)
	tr.fitState()
	if tr.st.Essence != full {
		t.Errorf("the state of a small object was compacted: %.100s", tr.st.Essence)
	}
}

func TestStateOfAnObjectNearTheLimitIsCompacted(t *testing.T) {
	obj, full, _ := bigObject(900<<10, 1)
	st := &state.State{Essence: full, Progress: map[string]*state.Progress{"update": {Reason: handlers.ReasonUpdate, Success: true, Handled: full}}}
	tr := sizeTurn(obj, st, nil)
	tr.fitState()
	if !state.IsCompact(tr.st.Essence) || !state.IsCompact(tr.st.Progress["update"].Handled) {
		t.Fatalf("not compacted: %.100s / %.100s", tr.st.Essence, tr.st.Progress["update"].Handled)
	}
	if n := len(tr.st.Encode()); n > 1024 {
		t.Errorf("the compact state is %d bytes", n)
	}
}

func TestACompactStateGoesBackToFullWhenItFitsAndIsWrittenAnyway(t *testing.T) {
	obj, full, tree := bigObject(1000, 2)
	_, oldFull, oldTree := bigObject(900<<10, 1)
	oldCompact, _ := state.CompactEssence(oldFull, oldTree, [][]string{{"spec", "replicas"}})
	loaded := &state.State{Essence: oldCompact}

	// Handled the change: the new state is the compact current essence.
	tr := sizeTurn(obj, &state.State{}, loaded)
	tr.known = loaded
	tr.essence, tr.essenceTree = full, tree
	tr.matchStoredForm()
	tr.st.Essence = tr.essence
	tr.fitState()
	if tr.st.Essence != full {
		t.Errorf("a small object's changed state stays compact: %.100s", tr.st.Essence)
	}

	// Nothing changed: the form alone is no reason to write.
	tr = sizeTurn(obj, loaded.Clone(), loaded)
	tr.known = loaded
	tr.essence, tr.essenceTree = full, tree
	tr.matchStoredForm()
	tr.fitState()
	if tr.st.Essence != oldCompact {
		t.Errorf("an unchanged compact state was rewritten: %.100s", tr.st.Essence)
	}
}

func TestAResultThatCannotFitIsAPermanentFailure(t *testing.T) {
	obj, _, _ := bigObject(900<<10, 1)
	tr := sizeTurn(obj, &state.State{}, nil)
	if err := tr.checkResult("create", map[string]any{"ok": true}); err != nil {
		t.Errorf("a small result: %v", err)
	}
	err := tr.checkResult("create", map[string]any{"blob": strings.Repeat("y", 600<<10)})
	var permanent *handlers.PermanentError
	if !errors.As(err, &permanent) || !strings.Contains(err.Error(), "cannot be stored in status.create") {
		t.Errorf("a result too large: %v", err)
	}
}

func TestWritesRefusedForTheirSizeAreRecognised(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewInternalError(errors.New("etcdserver: request is too large")), true},
		{apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{fmt.Errorf("patching: %w", apierrors.NewConflict(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, "x", errors.New("changed"))), false},
		{nil, false},
	} {
		if got := state.IsTooLarge(tc.err); got != tc.want {
			t.Errorf("isTooLarge(%v) = %t", tc.err, got)
		}
	}
}
