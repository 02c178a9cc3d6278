package gopf

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestStatusFlagsMayComeAfterTheKindAndName(t *testing.T) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	f := newStatusFlags(fs)
	positional, err := parseInterleaved(fs, []string{"kopfexamples", "-n", "ns1", "my-object", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := f.selection(positional)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Kind != "kopfexamples" || sel.Name != "my-object" || sel.Namespace != "ns1" || f.output != "json" || sel.PageSize != 500 {
		t.Errorf("got %+v, output %q", sel, f.output)
	}
}

func TestStatusFlagsThatContradictEachOtherAreRefused(t *testing.T) {
	for args, want := range map[string]string{
		"-n ns1 -A":              "not both",
		"--chunk-size 0":         "must be positive",
		"kind name extra":        `unexpected arguments ["extra"]`,
		"--no-such-flag":         "flag provided but not defined",
		"kind --chunk-size=-500": "must be positive",
	} {
		fs := flag.NewFlagSet("status", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := newStatusFlags(fs)
		positional, err := parseInterleaved(fs, strings.Fields(args))
		if err == nil {
			_, err = f.selection(positional)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", args, err, want)
		}
	}
}
