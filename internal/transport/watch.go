package transport

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultWatchInactivityTimeout is how long a watch stream may deliver
// nothing, not even a bookmark, before gopf ends it and the informer
// watches again (gopf.ManagerOptions.WatchInactivityTimeout's default). A
// busy kind's watch never comes near it; an idle kind's is opened again
// once per timeout, one request from the last resourceVersion.
const DefaultWatchInactivityTimeout = 2 * time.Minute

// BoundWatches makes every watch that cfg's clients open end when it has
// been silent for inactivity: the response body of a watch request is
// wrapped so that a read that waits longer cancels the request. client-go's
// reflector takes the end as a watch ending normally and watches again from
// the last resourceVersion it saw; the API server replays what happened
// since (or answers 410 Gone, and the reflector lists again). Streams that
// deliver anything, bookmarks included, within inactivity cost nothing
// extra. A positive server also asks the API server to end every watch
// after that long (timeoutSeconds, in place of client-go's 5 to 10
// minutes). Zero or negative durations leave that bound off.
func BoundWatches(cfg *rest.Config, inactivity, server time.Duration) {
	if inactivity <= 0 && server <= 0 {
		return
	}
	log := ctrl.Log.WithName("gopf").WithName("watch")
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &watchBound{next: rt, timeout: inactivity, server: server, log: log, clock: clock.RealClock{}}
	})
}

// watchBound is the round tripper of BoundWatches.
type watchBound struct {
	next    http.RoundTripper
	timeout time.Duration // inactivity; <= 0: none
	server  time.Duration // timeoutSeconds asked of the API server; <= 0: client-go's
	log     logr.Logger
	clock   clock.WithDelayedExecution
}

// RoundTrip sends req; a watch asks for the server's timeout, and the body
// of a successful one is bounded.
func (w *watchBound) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isWatch(req) {
		return w.next.RoundTrip(req)
	}
	if w.server > 0 {
		req = withServerTimeout(req, w.server)
	}
	if w.timeout <= 0 {
		return w.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := w.next.RoundTrip(req.WithContext(ctx))
	if err != nil || resp.StatusCode != http.StatusOK {
		if err != nil {
			cancel()
			return resp, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	b := &silenceBound{ReadCloser: resp.Body, cancel: cancel, timeout: w.timeout}
	b.timer = w.clock.AfterFunc(w.timeout, func() {
		b.silent.Store(true)
		w.log.Info("restarting a watch that delivered nothing, not even a bookmark", "path", req.URL.Path, "silentFor", w.timeout)
		cancel()
	})
	resp.Body = b
	return resp, nil
}

// withServerTimeout returns a copy of req whose timeoutSeconds is d, at
// least a second (the API server counts in whole seconds).
func withServerTimeout(req *http.Request, d time.Duration) *http.Request {
	u := *req.URL
	q := u.Query()
	q.Set("timeoutSeconds", strconv.FormatInt(int64(max(d.Round(time.Second), time.Second)/time.Second), 10))
	u.RawQuery = q.Encode()
	out := req.Clone(req.Context())
	out.URL = &u
	return out
}

// WrappedRoundTripper lets client-go reach the transport underneath.
func (w *watchBound) WrappedRoundTripper() http.RoundTripper { return w.next }

// isWatch reports whether req opens a watch stream.
func isWatch(req *http.Request) bool {
	v := req.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// silenceBound is a watch response body that cancels its request once no
// read has returned data for timeout.
type silenceBound struct {
	io.ReadCloser
	cancel  context.CancelFunc
	timeout time.Duration
	timer   clock.Timer
	silent  atomic.Bool
}

// Read reads the stream; data resets the clock. Once the stream has been
// silent for the timeout, reads fail with errWatchSilent.
func (b *silenceBound) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.timeout)
	}
	if err != nil && b.silent.Load() {
		return n, errWatchSilent
	}
	return n, err
}

// Close stops the clock and releases the request.
func (b *silenceBound) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// cancelOnClose releases the request of a refused watch with its body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// errWatchSilent ends a silent watch stream. It is a timeout in net.Error's
// sense, which client-go's stream watcher takes as the quiet end of a
// watch, not as an error to report.
var errWatchSilent error = silentError{}

type silentError struct{}

func (silentError) Error() string   { return "the watch stream was silent for too long" }
func (silentError) Timeout() bool   { return true }
func (silentError) Temporary() bool { return true }
