package faults_test

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// logBook keeps the error lines and warnings that operators log, so that a
// scenario can check that a failure was reported clearly, naming the object
// and the handler.
type logBook struct {
	mu    sync.Mutex
	lines []string
}

// maxLines bounds the book: a load run logs a line per failed request.
const maxLines = 20000

func (b *logBook) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) < maxLines {
		b.lines = append(b.lines, line)
	}
}

// Find returns the lines that contain every one of parts.
func (b *logBook) Find(parts ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range b.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// captureSink is a logr.LogSink that writes error lines, and info lines
// that report trouble, to a logBook, and everything to tee if set.
type captureSink struct {
	book   *logBook
	tee    logr.LogSink
	names  []string
	values []any
}

func (s *captureSink) Init(info logr.RuntimeInfo) {
	if s.tee != nil {
		s.tee.Init(info)
	}
}

func (s *captureSink) Enabled(level int) bool {
	return level == 0 || s.tee != nil && s.tee.Enabled(level)
}

func (s *captureSink) Info(level int, msg string, kv ...any) {
	if s.tee != nil && s.tee.Enabled(level) {
		s.tee.Info(level, msg, kv...)
	}
	if level == 0 && (strings.Contains(msg, "WARNING") || strings.Contains(msg, "fail") || strings.Contains(msg, "supersede")) {
		s.book.add(s.render("INFO", msg, nil, kv))
	}
}

func (s *captureSink) Error(err error, msg string, kv ...any) {
	if s.tee != nil {
		s.tee.Error(err, msg, kv...)
	}
	s.book.add(s.render("ERROR", msg, err, kv))
}

func (s *captureSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	if s.tee != nil {
		c.tee = s.tee.WithValues(kv...)
	}
	return &c
}

func (s *captureSink) WithName(name string) logr.LogSink {
	c := *s
	c.names = append(append([]string(nil), s.names...), name)
	if s.tee != nil {
		c.tee = s.tee.WithName(name)
	}
	return &c
}

// render writes a line as "LEVEL name: msg: err k=v ...", leaving out
// stack traces.
func (s *captureSink) render(level, msg string, err error, kv []any) string {
	var b strings.Builder
	b.WriteString(level + " " + strings.Join(s.names, "/") + ": " + msg)
	if err != nil {
		b.WriteString(": " + err.Error())
	}
	all := append(append([]any(nil), s.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		if all[i] == "stack" {
			continue
		}
		fmt.Fprintf(&b, " %v=%v", all[i], all[i+1])
	}
	return b.String()
}

// Len returns how many lines the book holds.
func (b *logBook) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lines)
}

// Since returns the lines added after the book held n.
func (b *logBook) Since(n int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines[min(n, len(b.lines)):]...)
}
