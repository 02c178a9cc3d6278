package engine

import (
	"encoding/json"
	"testing"

	"github.com/gopf-dev/gopf/internal/state"
)

// FromJSON decodes a JSON object written in a test.
func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad JSON in the test: %v\n%s", err, s)
	}
	return m
}

// JsonValue decodes a JSON value written in a test; "" stands for nothing
// (nil), as an absent essence.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	v := state.DecodeJSON(s)
	if v == nil && s != "null" {
		t.Fatalf("bad JSON in the test: %s", s)
	}
	return v
}
