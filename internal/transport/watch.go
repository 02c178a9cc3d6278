package transport

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultWatchInactivityTimeout is gopf.DefaultWatchInactivityTimeout.
const DefaultWatchInactivityTimeout = 2 * time.Minute

// BoundWatches makes every watch that cfg's clients open end when it has
// been silent for timeout: the response body of a watch request is wrapped
// so that a read that waits longer cancels the request. client-go's
// reflector takes the end as a watch ending normally and watches again from
// the last resourceVersion it saw; the API server replays what happened
// since (or answers 410 Gone, and the reflector lists again). Streams that
// deliver anything, bookmarks included, within timeout cost nothing extra.
func BoundWatches(cfg *rest.Config, timeout time.Duration) {
	log := ctrl.Log.WithName("gopf").WithName("watch")
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &watchBound{next: rt, timeout: timeout, log: log, clock: clock.RealClock{}}
	})
}

// watchBound is the round tripper of boundWatches.
type watchBound struct {
	next    http.RoundTripper
	timeout time.Duration
	log     logr.Logger
	clock   clock.WithDelayedExecution
}

// RoundTrip sends req; the body of a successful watch is bounded.
func (w *watchBound) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isWatch(req) {
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
