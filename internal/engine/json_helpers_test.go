package engine

import (
	"encoding/json"
	"testing"
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
