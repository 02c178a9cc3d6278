package logs

import (
	"sync"

	"github.com/go-logr/logr"
)

// WithValuesLazily returns log with the key-value pairs kv added when the
// logger is first used to write a line, not now. A handler's logger carries
// the handler, cause and retry, but most handler calls log nothing (or
// nothing at the configured level), and a sink such as zap's encodes the
// pairs as soon as they are added.
func WithValuesLazily(log logr.Logger, kv ...any) logr.Logger {
	sink := log.GetSink()
	if sink == nil {
		return log // logging is off
	}
	if _, ok := sink.(*lazySink); ok {
		return log.WithValues(kv...) // lazy already: no second wrapper, no frame more
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // lines are written through lazySink's methods
	}
	return logr.New(&lazySink{parent: sink, kv: kv})
}

// lazySink is a logr.LogSink that adds its key-value pairs to its parent
// the first time a line is written.
type lazySink struct {
	parent logr.LogSink // with one more frame of call depth than the logger's
	kv     []any
	once   sync.Once
	sink   logr.LogSink // parent with kv, once a line was written
}

// Init does nothing: the parent was initialised by its own logger.
func (s *lazySink) Init(logr.RuntimeInfo) {}

// Enabled is the parent's: key-value pairs do not change the level.
func (s *lazySink) Enabled(level int) bool { return s.parent.Enabled(level) }

func (s *lazySink) Info(level int, msg string, kv ...any) { s.built().Info(level, msg, kv...) }

func (s *lazySink) Error(err error, msg string, kv ...any) { s.built().Error(err, msg, kv...) }

func (s *lazySink) WithValues(kv ...any) logr.LogSink {
	return &lazySink{parent: s.parent, kv: append(append(make([]any, 0, len(s.kv)+len(kv)), s.kv...), kv...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{parent: s.parent.WithName(name), kv: s.kv}
}

func (s *lazySink) built() logr.LogSink {
	s.once.Do(func() { s.sink = s.parent.WithValues(s.kv...) })
	return s.sink
}
