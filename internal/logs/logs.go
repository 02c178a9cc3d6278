package logs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Posting is reconcile.LogEvents: which handler log lines are posted as
// Events.
type Posting int

// The values of reconcile.LogEvents.
const (
	PostNone Posting = iota
	PostErrors
	PostInfo
)

// Bridge wraps a handler's logger so that its lines are also posted as
// Events with post, as level says.
func Bridge(log logr.Logger, level Posting, post func(eventType, reason, message string)) logr.Logger {
	if level == PostNone {
		return log
	}
	sink := log.GetSink()
	if sink == nil {
		sink = nopSink{} // logging is off, the bridge is not
	}
	return logr.New(&eventSink{LogSink: sink, level: level, post: post})
}

// eventSink is a logr.LogSink that also posts lines as Events.
type eventSink struct {
	logr.LogSink
	level Posting
	post  func(eventType, reason, message string)
}

// Enabled is true for the lines that are posted, whatever the log level.
func (s *eventSink) Enabled(level int) bool {
	return s.LogSink.Enabled(level) || s.level >= PostInfo && level == 0
}

func (s *eventSink) Info(level int, msg string, kv ...any) {
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
	if s.level >= PostInfo && level == 0 {
		s.post(corev1.EventTypeNormal, "Logging", line(msg, kv))
	}
}

func (s *eventSink) Error(err error, msg string, kv ...any) {
	s.LogSink.Error(err, msg, kv...)
	s.post(corev1.EventTypeWarning, "Logging", line(msg+": "+fmt.Sprint(err), kv))
}

func (s *eventSink) WithValues(kv ...any) logr.LogSink {
	return &eventSink{LogSink: s.LogSink.WithValues(kv...), level: s.level, post: s.post}
}

func (s *eventSink) WithName(name string) logr.LogSink {
	return &eventSink{LogSink: s.LogSink.WithName(name), level: s.level, post: s.post}
}

// line renders a log line with its key/value pairs, in key order.
func line(msg string, kv []any) string {
	pairs := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%v=%v", kv[i], kv[i+1]))
	}
	sort.Strings(pairs)
	if len(pairs) == 0 {
		return msg
	}
	return msg + " (" + strings.Join(pairs, ", ") + ")"
}

// nopSink discards everything; it stands in for a logger with no sink.
type nopSink struct{}

func (nopSink) Init(logr.RuntimeInfo)            {}
func (nopSink) Enabled(int) bool                 { return false }
func (nopSink) Info(int, string, ...any)         {}
func (nopSink) Error(error, string, ...any)      {}
func (n nopSink) WithValues(...any) logr.LogSink { return n }
func (n nopSink) WithName(string) logr.LogSink   { return n }

// Recorder is the recorder of the Events gopf posts (see Events), under
// component and added to mgr to post them, or one that posts nothing when
// off. One serves an operator: it is made before the manager starts.
func Recorder(mgr manager.Manager, off bool, component string) (recorder.EventRecorder, error) {
	if off {
		return noEvents{}, nil
	}
	ev := NewEvents(mgr.GetClient(), mgr.GetScheme(), component, mgr.GetLogger().WithName("gopf").WithName("events"))
	if err := mgr.Add(ev); err != nil {
		return nil, fmt.Errorf("gopf: adding the poster of Events: %w", err)
	}
	return ev, nil
}

// noEvents is a recorder that posts nothing.
type noEvents struct{}

func (noEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

func (noEvents) AnnotatedEventf(runtime.Object, runtime.Object, map[string]string, string, string, string, string, ...any) {
}
