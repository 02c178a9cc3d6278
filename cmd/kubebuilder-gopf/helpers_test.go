package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/scaffold"
)

// fixture is a captured request, decoded whole (the fixtures are small).
type fixture struct {
	APIVersion  string            `json:"apiVersion"`
	Args        []string          `json:"args"`
	Command     string            `json:"command"`
	Config      json.RawMessage   `json:"config,omitempty"`
	PluginChain []string          `json:"pluginChain,omitempty"`
	Universe    map[string]string `json:"universe"`
}

// loadFixture reads testdata/<name>.json.
func loadFixture(t *testing.T, name string) *fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &f
}

// with returns a copy of the fixture with another universe.
func (f *fixture) with(universe map[string]string) *fixture {
	c := *f
	c.Universe = universe
	return &c
}

// withArgs returns a copy of the fixture with other arguments.
func (f *fixture) withArgs(args ...string) *fixture {
	c := *f
	c.Args = args
	return &c
}

func (f *fixture) encode(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testOptions are the plugin's options in tests: gopf from the checkout
// under test, a fixed year, notes in the test log.
func testOptions(t *testing.T) scaffold.Options {
	root := repoRoot(t)
	return scaffold.Options{
		Getenv: func(name string) string {
			if name == "GOPF_REPLACE" {
				return root
			}
			return ""
		},
		Year:  2026,
		Notes: logWriter{t},
	}
}

// logWriter writes to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// call runs the plugin's main logic on a request and decodes its answer.
func call(t *testing.T, request []byte, opts scaffold.Options) protocol.Response {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(bytes.NewReader(request), &stdout, &stderr, opts); code != 0 {
		t.Fatalf("run returned %d; stderr: %s", code, stderr.String())
	}
	var resp protocol.Response
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("the response is not JSON: %v\n%s", err, stdout.String())
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value: %s", stdout.String())
	}
	return resp
}

// mustSucceed fails the test when the response reports an error.
func mustSucceed(t *testing.T, resp protocol.Response) protocol.Response {
	t.Helper()
	if resp.Error {
		t.Fatalf("the %s response failed: %s", resp.Command, strings.Join(resp.ErrorMsgs, "\n"))
	}
	return resp
}

// repoRoot finds the checkout under test: the nearest folder above the
// working directory whose go.mod declares gopf's module.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module "+scaffold.GopfModule+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of " + scaffold.GopfModule + " above the working directory")
		}
		dir = parent
	}
}

// overlay returns u with files written over it, as kubebuilder writes a
// response.
func overlay(u, files map[string]string) map[string]string {
	out := make(map[string]string, len(u)+len(files))
	for p, c := range u {
		out[p] = c
	}
	for p, c := range files {
		out[p] = c
	}
	return out
}

// chain is the scaffolding of the captured project with gopf, command by
// command: what kubebuilder would have sent gopf and what gopf answered.
type chain struct {
	steps []step
}

type step struct {
	name     string            // the fixture
	request  *fixture          // what gopf was sent
	response protocol.Response // what it answered
	after    map[string]string // the project afterwards
}

// final is the project after the last command.
func (c *chain) final() map[string]string { return c.steps[len(c.steps)-1].after }

// runChain answers the captured init, create api and create webhook
// requests in turn. The captures hold go/v4's output without gopf's, so
// before each command after init, go/v4's changes between two captures are
// replayed onto the project as gopf left it (see mergeUniverse): that is
// the request kubebuilder would have sent.
func runChain(t *testing.T, opts scaffold.Options) *chain {
	t.Helper()
	return runCaptures(t, opts, "init", "create-api", "create-webhook")
}

// runCaptures is runChain for the captures of another project: the
// fixtures named, in the order they were captured.
func runCaptures(t *testing.T, opts scaffold.Options, names ...string) *chain {
	t.Helper()
	c := &chain{}
	var prevCapture, project map[string]string
	for _, name := range names {
		f := loadFixture(t, name)
		u := f.Universe
		if project != nil {
			var err error
			if u, err = mergeUniverse(prevCapture, project, f.Universe); err != nil {
				t.Fatalf("%s: replaying go/v4's changes: %v", name, err)
			}
		}
		req := f.with(u)
		resp := mustSucceed(t, call(t, req.encode(t), opts))
		project = overlay(u, resp.Universe)
		prevCapture = f.Universe
		c.steps = append(c.steps, step{name: name, request: req, response: resp, after: project})
	}
	return c
}

// mergeUniverse replays the changes from capture base to capture theirs
// (go/v4's work between two commands) onto mine (the project as gopf left
// it). go.mod is gopf's (the test tidies it), go.sum go/v4's.
func mergeUniverse(base, mine, theirs map[string]string) (map[string]string, error) {
	out := map[string]string{}
	paths := map[string]bool{}
	for _, u := range []map[string]string{base, mine, theirs} {
		for p := range u {
			paths[p] = true
		}
	}
	for p := range paths {
		b, inBase := base[p]
		m, inMine := mine[p]
		th, inTheirs := theirs[p]
		switch {
		case p == "go.mod":
			out[p] = m
		case !inMine && !inTheirs:
		case !inTheirs:
			out[p] = m
		case !inMine || (inBase && m == b) || m == th:
			out[p] = th
		case !inBase || th == b:
			if inBase {
				out[p] = m
				continue
			}
			return nil, fmt.Errorf("%s: both sides added it, differently", p)
		default:
			merged, err := replayInsertions(b, m, th)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out[p] = merged
		}
	}
	return out, nil
}

// replayInsertions applies the lines theirs inserted into base to mine.
// Each inserted run of lines goes before the line that follows it in theirs
// (slid down over repeated lines, so that it lands on the next marker), which
// must occur exactly once in mine. Changes other than insertions are an
// error: go/v4 only inserts at its markers.
func replayInsertions(base, mine, theirs string) (string, error) {
	b, th := strings.Split(base, "\n"), strings.Split(theirs, "\n")
	hunks, err := insertions(b, th)
	if err != nil {
		return "", err
	}
	out := strings.Split(mine, "\n")
	for _, h := range hunks {
		lines, at := h.lines, h.before
		for at < len(b) && len(lines) > 0 && lines[0] == b[at] {
			lines = append(lines[1:], b[at])
			at++
		}
		if at >= len(b) {
			out = append(out, lines...)
			continue
		}
		anchor := b[at]
		idx := -1
		for i, l := range out {
			if l == anchor {
				if idx >= 0 {
					return "", fmt.Errorf("the line %q that go/v4 inserted before is not unique", anchor)
				}
				idx = i
			}
		}
		if idx < 0 {
			return "", fmt.Errorf("the line %q that go/v4 inserted before is gone", anchor)
		}
		out = append(out[:idx], append(append([]string{}, lines...), out[idx:]...)...)
	}
	return strings.Join(out, "\n"), nil
}

// hunk is a run of lines inserted before line index before of the base.
type hunk struct {
	before int
	lines  []string
}

// insertions diffs two line lists (longest common subsequence) and returns
// the runs of lines b2 inserts; it fails if b2 also removes lines.
func insertions(b1, b2 []string) ([]hunk, error) {
	n, m := len(b1), len(b2)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if b1[i] == b2[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hunks []hunk
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && b1[i] == b2[j]:
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			if len(hunks) > 0 && hunks[len(hunks)-1].before == i {
				hunks[len(hunks)-1].lines = append(hunks[len(hunks)-1].lines, b2[j])
			} else {
				hunks = append(hunks, hunk{before: i, lines: []string{b2[j]}})
			}
			j++
		default:
			return nil, fmt.Errorf("go/v4 changed or removed line %d (%q), which this test cannot replay", i+1, b1[i])
		}
	}
	return hunks, nil
}
