package gopf_test

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logs records what the operators of these tests log (controller-runtime's
// logger, and so every manager's), for tests that assert on it, and passes
// it on to stderr when GOPF_TEST_LOG is set.
var logs = &logRecord{}

// logRecord holds the lines logged so far.
type logRecord struct {
	mu    sync.Mutex
	lines []logLine
}

// logLine is one line logged.
type logLine struct {
	error bool
	msg   string
	err   error
	kv    string // the key-value pairs, printed
}

func (l logLine) String() string {
	if l.error {
		return fmt.Sprintf("ERROR %s: %v %s", l.msg, l.err, l.kv)
	}
	return l.msg + " " + l.kv
}

// add records a line.
func (r *logRecord) add(line logLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

// mark returns a position in the record, for since.
func (r *logRecord) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// since returns the lines logged after mark, the errors only if errors.
func (r *logRecord) since(mark int, errors bool) []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, l := range r.lines[mark:] {
		if l.error || !errors {
			out = append(out, l)
		}
	}
	return out
}

// logger returns a logger that records into r.
func (r *logRecord) logger() logr.Logger {
	next := logr.Discard().GetSink()
	if os.Getenv("GOPF_TEST_LOG") != "" {
		next = zap.New(zap.UseDevMode(true)).GetSink()
	}
	return logr.New(recordingSink{r: r, next: next})
}

// recordingSink records every line and passes it on to next.
type recordingSink struct {
	r    *logRecord
	next logr.LogSink
}

func (s recordingSink) Init(info logr.RuntimeInfo) { s.next.Init(info) }
func (s recordingSink) Enabled(int) bool           { return true }

func (s recordingSink) Info(level int, msg string, kv ...any) {
	s.r.add(logLine{msg: msg, kv: fmt.Sprint(kv...)})
	if s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s recordingSink) Error(err error, msg string, kv ...any) {
	s.r.add(logLine{error: true, msg: msg, err: err, kv: fmt.Sprint(kv...)})
	s.next.Error(err, msg, kv...)
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	return recordingSink{r: s.r, next: s.next.WithValues(kv...)}
}

func (s recordingSink) WithName(name string) logr.LogSink {
	return recordingSink{r: s.r, next: s.next.WithName(name)}
}

// find returns the first line logged after mark whose message contains
// msg, and whether there is one.
func (r *logRecord) find(mark int, msg string) (logLine, bool) {
	for _, l := range r.since(mark, false) {
		if strings.Contains(l.msg, msg) {
			return l, true
		}
	}
	return logLine{}, false
}

// contains reports whether a line with msg was logged after mark.
func (r *logRecord) contains(mark int, msg string) bool {
	_, ok := r.find(mark, msg)
	return ok
}
