package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/gopf-dev/gopf/handlers"
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

func TestStatusAndPlanShowTheirHelpWithoutACluster(t *testing.T) {
	for _, command := range []string{"status", "plan"} {
		var stderr strings.Builder
		noCluster := func() (*rest.Config, error) {
			t.Errorf("%s -h looked for the cluster", command)
			return nil, errors.New("no cluster")
		}
		err := statusCommand(context.Background(), io.Discard, &stderr, noCluster, Program{Name: "op", Registry: handlers.NewRegistry()}, command, []string{"-h"})
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s -h returned %v, want flag.ErrHelp", command, err)
		}
		if !strings.Contains(stderr.String(), "Usage: op "+command) {
			t.Errorf("%s -h printed %q, want its usage", command, stderr.String())
		}
	}
}
