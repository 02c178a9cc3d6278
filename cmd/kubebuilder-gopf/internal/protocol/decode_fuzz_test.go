package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/scaffold"
)

// skipBudget is the memory Decode may use, whatever the size of the values
// it skips: its read buffer and bookkeeping.
const skipBudget = 128 << 10

// FuzzDecode feeds Decode any bytes, and the requests kubebuilder sent
// (../../testdata) as mutated by the fuzzer, keeping what the plugin keeps.
// Decode never panics; it succeeds only on a request that is a JSON object
// (trailing data aside), reads the same a byte at a time as at once, keeps
// only what it was asked to keep. The input is also decoded as the value of
// a universe entry the plugin skips and of an unknown field: skipping it
// takes no memory that grows with its size, and a valid JSON value is
// skipped without an error.
//
// Crashers the fuzzer found are kept in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob("../../testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no requests in ../../testdata: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		``, `{}`, ` { } trailing`, `[]`, `null`,
		`{"command":"flags","universe":null}`,
		`{"universe": {"go.mod": "module x\n", "bin/tool": "\u0000\"{[\\", "PROJECT": 1}}`,
		`{"unknown": {"a": [1, -2.5e+3, true, false, null, {"b": "}"}]}, "command": "init"}`,
		`{"config": {"domain": "example.com", "resources": [{"group": "db", "api": {"namespaced": true}}]}}`,
		`{"universe": {"bin/x": [1, 2}}`,
		`{"args": ["--group", "db"], "pluginChain": null, "apiVersion": "v1alpha1"}`,
		`{"universe": {"a": "\ud800\udc00 \u00e9 \/ \b\f\n\r\t"}}`,
		`{"x": 01}`, `{"x": 1.}`, `{"x": -}`, `{"x": 1e}`, `{"x": tru}`, `{"x": nulll}`, `{"x": "\q"}`, `{"x": "\u12G4"}`, "{\"x\": \"\x01\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := protocol.Decode(bytes.NewReader(data), scaffold.Keep)

		// The same request in small pieces (a byte at a time unless it is
		// large): escapes and values straddle buffer boundaries.
		piece := 1
		if len(data) > 4<<10 {
			piece = 61
		}
		req1, err1 := protocol.Decode(inPieces{bytes.NewReader(data), piece}, scaffold.Keep)
		if fmt.Sprint(err) != fmt.Sprint(err1) || !sameRequest(req, req1) {
			t.Fatalf("%d bytes at a time, Decode reads\n %+v, %v\ninstead of\n %+v, %v", piece, req1, err1, req, err)
		}

		checkSkipped(t, data)
		if err != nil {
			return
		}
		checkIsObject(t, data)
		for path := range req.Universe {
			if !scaffold.Keep(path) || !req.Present[path] {
				t.Errorf("universe entry %q was kept (asked for: %v, present: %v)", path, scaffold.Keep(path), req.Present[path])
			}
		}
		notKept := 0
		for path := range req.Present {
			if !scaffold.Keep(path) {
				notKept++
			}
		}
		if req.Skipped < notKept || req.SkippedBytes < 0 || req.SkippedBytes > int64(len(data)) {
			t.Errorf("skipped %d entries (%d bytes) of %d bytes, but %d paths were not kept", req.Skipped, req.SkippedBytes, len(data), notKept)
		}
	})
}

// checkSkipped decodes value as a universe entry the plugin skips and as an
// unknown field.
func checkSkipped(t *testing.T, value []byte) {
	t.Helper()
	for _, wrap := range []struct {
		before, after string
		entry         bool // a universe entry, counted as skipped
	}{{`{"universe": {"bin/skipped": `, `}}`, true}, {`{"unknown": `, `}`, false}} {
		if !wrap.entry && len(value) > 4<<10 {
			continue // skipped the same way as an entry; spare make test the time
		}
		data := slices.Concat([]byte(wrap.before), value, []byte(wrap.after))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, err := protocol.Decode(bytes.NewReader(data), scaffold.Keep)
		runtime.ReadMemStats(&after)
		if used := after.TotalAlloc - before.TotalAlloc; used > skipBudget {
			t.Fatalf("skipping a value of %d bytes took %d bytes of memory", len(value), used)
		}
		if err == nil {
			checkIsObject(t, data)
		}
		if !json.Valid(value) {
			continue
		}
		if err != nil {
			t.Fatalf("a valid JSON value could not be skipped: %v\n%q", err, data)
		}
		if want := int64(len(bytes.TrimSpace(value))); wrap.entry && (req.Skipped != 1 || req.SkippedBytes != want) {
			t.Fatalf("skipped %d entries of %d bytes, want 1 of %d:\n%q", req.Skipped, req.SkippedBytes, want, data)
		}
	}
}

// checkIsObject fails the test unless data starts with a JSON object, as
// encoding/json reads it.
func checkIsObject(t *testing.T, data []byte) {
	t.Helper()
	var first json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&first); err != nil || first[0] != '{' {
		t.Fatalf("Decode read a request that is not a JSON object (encoding/json: %v):\n%q", err, data)
	}
}

// inPieces reads r at most n bytes at a time.
type inPieces struct {
	r io.Reader
	n int
}

func (p inPieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

// sameRequest compares two decoded requests, nil or not.
func sameRequest(a, b *protocol.Request) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && fmt.Sprint(a.Present) == fmt.Sprint(b.Present) &&
		a.Skipped == b.Skipped && a.SkippedBytes == b.SkippedBytes
}
