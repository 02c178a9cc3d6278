package logs

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

func TestLoggersGetTheirValuesWhenTheyFirstWrite(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{LogCaller: funcr.All})
	l := WithValuesLazily(log, "handler", "h1")
	l.V(1).Info("not at this level")
	if sink := l.GetSink().(*lazySink); sink.sink != nil {
		t.Error("the values were added for a line that was not written")
	}
	if len(lines) != 0 {
		t.Errorf("a V(1) line was written: %q", lines)
	}
	l.WithValues("retry", 2).Info("written", "k", 1)
	if len(lines) != 1 || !strings.Contains(lines[0], `"handler"="h1"`) || !strings.Contains(lines[0], `"retry"=2`) || !strings.Contains(lines[0], `"k"=1`) {
		t.Fatalf("lines = %q, want one with the handler, the retry and k", lines)
	}
	if !strings.Contains(lines[0], "lazy_test.go") {
		t.Errorf("the line names the wrong caller: %q", lines[0])
	}
	if got := WithValuesLazily(logr.Discard(), "a", 1); got.GetSink() != nil {
		t.Error("a logger that is off became one that is on")
	}
}
