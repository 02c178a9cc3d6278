package handlers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

func TestIndexKeepsEachObjectsEntriesAndDropsThemWithIt(t *testing.T) {
	indexes := spec.NewIndexes()
	if indexes.Get("by_app") != nil {
		t.Fatal("an index nobody added exists")
	}
	spec.AddIndex(indexes, "by_app")
	ix := indexes.Get("by_app")
	if ix == nil || spec.AddIndex(indexes, "by_app") != ix {
		t.Fatal("adding an index again does not return the existing one")
	}
	spec.SetEntries(ix, "ns/a", map[any]any{"db": "a", "all": 1})
	spec.SetEntries(ix, "ns/b", map[any]any{"db": "b", "all": 2})
	if got := fmt.Sprint(ix.Get("db")); got != "[a b]" {
		t.Errorf("Get(db) = %s", got)
	}
	spec.SetEntries(ix, "ns/a", map[any]any{"web": "a"}) // a moves from db to web
	if got := fmt.Sprint(ix.Get("db"), ix.Keys()); got != "[b] [all db web]" {
		t.Errorf("after the move: %s", got)
	}
	spec.SetEntries(ix, "ns/b", nil)
	spec.SetEntries(ix, "ns/missing", nil)
	if got := fmt.Sprint(ix.Keys(), ix.Get("db")); got != "[web] []" {
		t.Errorf("after removal: %s", got)
	}
	if (*spec.Indexes)(nil).Get("by_app") != nil {
		t.Error("a nil Indexes has an index")
	}
}

func TestIndexesReadKeysOfAnyComparableTypeAndFlatIndexesTyped(t *testing.T) {
	type key struct {
		Namespace string
		Port      int
	}
	reg := handlers.NewRegistry()
	byPort := handlers.OnIndex(reg, "by_port", func(*corev1.Service, *handlers.Cause) map[key]int { return nil })
	flat := handlers.OnFlatIndex(reg, "names", func(*corev1.Service, *handlers.Cause) string { return "" })
	engineSide := spec.NewIndexes()
	indexes := (*handlers.Indexes)(engineSide) // as the engine hands them to handlers
	if byPort.Get(indexes, key{"ns", 80}) != nil || byPort.Keys(indexes) != nil {
		t.Error("an index that does not exist is not empty")
	}
	spec.SetEntries(spec.AddIndex(engineSide, "by_port"), "ns/b", map[any]any{key{"ns", 80}: 2, key{"ns", 443}: 2})
	spec.SetEntries(engineSide.Get("by_port"), "ns/a", map[any]any{key{"ns", 80}: 1})
	spec.SetEntries(spec.AddIndex(engineSide, "names"), "ns/b", map[any]any{nil: "b"})
	spec.SetEntries(engineSide.Get("names"), "ns/a", map[any]any{nil: "a"})
	if got := fmt.Sprint(byPort.Get(indexes, key{"ns", 80}), byPort.Keys(indexes)); got != "[1 2] [{ns 443} {ns 80}]" {
		t.Errorf("by_port: Get, Keys = %s", got)
	}
	if got := fmt.Sprint(flat.Get(indexes, nil), flat.Keys(indexes)); got != "[a b] [<nil>]" {
		t.Errorf("flat index: Get(nil), Keys = %s", got)
	}
}

func TestCauseEventHelpersPostThroughTheEngine(t *testing.T) {
	r := handlers.NewRegistry()
	handlers.OnCreate(r, func(ctx context.Context, pod *corev1.Pod, c *handlers.Cause) (any, error) {
		c.Info("Hello", "hi %d", 1)
		c.Warn("Careful", "%s", "x")
		c.Exception(fmt.Errorf("boom"))
		c.Exception(nil)
		return nil, nil
	})
	h := handlers.HandlersOf(r)[0]
	var got []string
	post := func(eventType, reason, message string) { got = append(got, eventType+" "+reason+" "+message) }
	if _, err := h.Call(context.Background(), &corev1.Pod{}, handlers.CauseWith(r, "", &handlers.Extras{Post: post})); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Normal Hello hi 1", "Warning Careful x", "Warning Error boom"}; !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	(&handlers.Cause{}).Info("NoSink", "posting without a sink does nothing")
	if _, err := h.Call(context.Background(), &corev1.Pod{}, &handlers.Cause{}); err != nil {
		t.Errorf("posting where the engine has no object: %v", err)
	}
}

// The engine caps Event messages (the API server rejects long ones) with
// spec.Truncate, which must not split a character.
func TestLongMessagesAreCutWithoutSplittingACharacter(t *testing.T) {
	msg := spec.Truncate(strings.Repeat("é", 1000), 1024)
	if len(msg) > 1024 || !strings.HasSuffix(msg, "...") || !strings.HasPrefix(msg, "é") || !utf8.ValidString(msg) {
		t.Errorf("cut message has %d bytes: %q...", len(msg), msg[:10])
	}
	if got := spec.Truncate("short", 1024); got != "short" {
		t.Errorf("a short message was changed to %q", got)
	}
}
