package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func keepGo(p string) bool { return strings.HasSuffix(p, ".go") }

func TestDecodeKeepsWhatIsAskedForInAnyFieldOrder(t *testing.T) {
	in := `{
	  "universe": {"bin/tool": "\u0000\"{[\\", "main.go": "package main\n\n// \u00e9 \"q\" \\\n", "nested/x.go": ""},
	  "unknown": {"a": [1, 2.5e3, true, null, {"b": "}"}]},
	  "config": {"domain": "example.com", "repo": "example.com/demo", "multigroup": true, "layout": ["go.kubebuilder.io/v4"],
	             "resources": [{"group": "db", "version": "v1", "kind": "Database", "api": {"namespaced": true}, "controller": true}]},
	  "args": ["--group", "db"],
	  "pluginChain": ["go.kubebuilder.io/v4", "gopf/v1-alpha"],
	  "command": "create api",
	  "apiVersion": "v1alpha1"
	}`
	req, err := Decode(strings.NewReader(in), keepGo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"main.go": "package main\n\n// é \"q\" \\\n", "nested/x.go": ""}
	if !reflect.DeepEqual(req.Universe, want) {
		t.Errorf("universe = %q, want %q", req.Universe, want)
	}
	if !req.Present["bin/tool"] || req.Skipped != 1 || req.SkippedBytes != int64(len(`"\u0000\"{[\\"`)) {
		t.Errorf("present %v, skipped %d (%d bytes)", req.Present, req.Skipped, req.SkippedBytes)
	}
	if req.Command != "create api" || req.APIVersion != APIVersion || !reflect.DeepEqual(req.Args, []string{"--group", "db"}) ||
		len(req.PluginChain) != 2 {
		t.Errorf("request fields: %+v", req)
	}
	c := req.Config
	if c == nil || c.Domain != "example.com" || !c.MultiGroup || len(c.Resources) != 1 || c.Resources[0].API == nil || !c.Resources[0].Controller {
		t.Errorf("config: %+v", c)
	}
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	// Every kind of string content encoding/json produces, read back.
	files := map[string]string{
		"a.go": "plain",
		"b.go": "\x00\x01\x1f <>&\u2028\u2029 \"\\ /\t\n\r é 日本",
		"c.go": string([]byte{0xff, 0xfe, 'x'}), // invalid UTF-8 becomes U+FFFD
		"d.go": strings.Repeat("x\\\"", 100000),
	}
	data, err := json.Marshal(map[string]any{"command": "init", "universe": files})
	if err != nil {
		t.Fatal(err)
	}
	var std struct{ Universe map[string]string }
	if err := json.Unmarshal(data, &std); err != nil {
		t.Fatal(err)
	}
	// One byte at a time, so that escapes straddle every buffer boundary.
	req, err := Decode(iotest.OneByteReader(bytes.NewReader(data)), keepGo)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Universe, std.Universe) {
		t.Error("the universe differs from encoding/json's reading")
	}
}

func TestDecodeAcceptsEmptyAndNullUniverses(t *testing.T) {
	for _, in := range []string{`{"command":"flags","universe":{}}`, `{"command":"flags","universe":null}`, `{"command":"flags"}`, ` { } `} {
		req, err := Decode(strings.NewReader(in), keepGo)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if len(req.Universe) != 0 {
			t.Errorf("%s: universe %v", in, req.Universe)
		}
	}
}

func TestDecodeRejectsBrokenRequests(t *testing.T) {
	for in, want := range map[string]string{
		``:                                    "unexpected EOF",
		`[]`:                                  `want '{'`,
		`{"universe": {"a.go": "abc`:          "unexpected EOF",
		`{"universe": {"bin/x": "abc`:         "unexpected EOF",
		`{"universe": {"a.go": 1}}`:           "cannot unmarshal",
		`{"universe": {"a.go" "x"}}`:          `want ':'`,
		`{"command": "init" "args": []}`:      `want ',' or '}'`,
		`{"args": [1, 2}`:                     `want ',' or ']'`,
		`{"universe": {"bin/x": [1, 2}}`:      `want ',' or ']'`,
		`{"command": tru}`:                    "invalid",
		`{"config": {"resources": "many"}}`:   "cannot unmarshal",
		`{"universe": {"bin/x": {"a" 1}}}`:    `want ':'`,
		`{"universe": nul}`:                   "invalid literal",
		`{"universe": {"a.go": "x"}, "x": ]}`: "unexpected",
	} {
		_, err := Decode(strings.NewReader(in), keepGo)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", in, err, want)
		}
	}
}

func TestDecodeRefusesToKeepHugeFiles(t *testing.T) {
	in := io.MultiReader(strings.NewReader(`{"universe": {"big.go": "`), strings.NewReader(strings.Repeat("x", MaxKeptFile+1)), strings.NewReader(`"}}`))
	_, err := Decode(in, keepGo)
	if err == nil || !strings.Contains(err.Error(), `"big.go" is larger than`) {
		t.Errorf("error %v", err)
	}
}

func TestDecodeReportsReadErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := Decode(io.MultiReader(strings.NewReader(`{"universe": {"bin/x": "abc`), iotest.ErrReader(boom)), keepGo)
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
}

func TestResponseFieldNamesAreTheProtocols(t *testing.T) {
	resp := Errorf(&Request{Command: "init"}, "bad")
	resp.Flags = []Flag{{Name: "n", Type: "string", Default: "d", Usage: "u"}}
	resp.Metadata = Metadata{Description: "x", Examples: "y"}
	data, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1alpha1","command":"init","metadata":{"description":"x","examples":"y"},"universe":{},` +
		`"error":true,"errorMsgs":["bad"],"flags":[{"name":"n","type":"string","default":"d","usage":"u"}]}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}
