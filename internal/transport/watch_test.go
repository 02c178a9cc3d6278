package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

// stream is a watch response body fed by the test; like net/http's, a read
// waiting for data ends when the request's context is done.
type stream struct {
	ctx  context.Context
	data chan []byte
}

func (s *stream) Read(p []byte) (int, error) {
	select {
	case b := <-s.data:
		return copy(p, b), nil
	case <-s.ctx.Done():
		return 0, s.ctx.Err()
	}
}

func (s *stream) Close() error { return nil }

// serve answers every request with a stream and hands the stream to the
// test.
type serve chan *stream

func (c serve) RoundTrip(req *http.Request) (*http.Response, error) {
	s := &stream{ctx: req.Context(), data: make(chan []byte)}
	c <- s
	return &http.Response{StatusCode: http.StatusOK, Body: s, Request: req}, nil
}

const bound = time.Minute

// open sends a request for url through a bounded round tripper on a fake
// clock and returns the response body and the stream behind it.
func open(t *testing.T, rawURL string) (io.ReadCloser, *stream, *clocktesting.FakeClock) {
	t.Helper()
	streams := make(serve, 1)
	fake := clocktesting.NewFakeClock(time.Now())
	rt := &watchBound{next: streams, timeout: bound, log: logr.Discard(), clock: fake}
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(&http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp.Body, <-streams, fake
}

// read reads once in the background.
func read(body io.Reader) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := body.Read(make([]byte, 64))
		done <- err
	}()
	return done
}

func TestAWatchThatKeepsDeliveringIsNeverEnded(t *testing.T) {
	body, s, fake := open(t, "https://api/apis/kopf.dev/v1/kopfexamples?watch=true&allowWatchBookmarks=true")
	for range 5 { // five times the bound in all
		done := read(body)
		fake.Step(bound - time.Second)
		s.data <- []byte(`{"type":"BOOKMARK"}`)
		if err := <-done; err != nil {
			t.Fatalf("a stream with data every %s was ended: %v", bound-time.Second, err)
		}
	}
	if s.ctx.Err() != nil {
		t.Error("the request was cancelled")
	}
}

func TestAWatchSilentForTheBoundEndsAsATimeout(t *testing.T) {
	body, s, fake := open(t, "https://api/api/v1/configmaps?watch=1")
	done := read(body)
	s.data <- []byte(`{"type":"ADDED"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done = read(body)
	fake.Step(bound)
	err := <-done
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the silent stream ended with %v, not a timeout (client-go reports other errors as watch errors)", err)
	}
	if s.ctx.Err() == nil {
		t.Error("the request was not cancelled")
	}
}

func TestRequestsOtherThanWatchesAreNotBounded(t *testing.T) {
	body, s, fake := open(t, "https://api/api/v1/configmaps?limit=500")
	if _, bounded := body.(*silenceBound); bounded {
		t.Fatal("a list was given a bound")
	}
	fake.Step(10 * bound)
	if s.ctx.Err() != nil {
		t.Error("a list was cancelled")
	}
}

// record answers every request with an empty body and keeps its URL.
type record chan *url.URL

func (c record) RoundTrip(req *http.Request) (*http.Response, error) {
	c <- req.URL
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(http.NoBody), Request: req}, nil
}

func TestWatchesAskTheAPIServerForTheServerTimeout(t *testing.T) {
	for _, tc := range []struct {
		url    string
		server time.Duration
		want   string // timeoutSeconds sent
	}{
		{"https://api/api/v1/pods?watch=true&timeoutSeconds=421", 90 * time.Second, "90"},
		{"https://api/api/v1/pods?watch=1", 300 * time.Millisecond, "1"},
		{"https://api/api/v1/pods?watch=true&timeoutSeconds=421", 0, "421"},
		{"https://api/api/v1/pods?limit=500", time.Minute, ""},
	} {
		sent := make(record, 1)
		rt := &watchBound{next: sent, server: tc.server, log: logr.Discard(), clock: clocktesting.NewFakeClock(time.Now())}
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(&http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		got := <-sent
		if v := got.Query().Get("timeoutSeconds"); v != tc.want {
			t.Errorf("%s with a server timeout of %s: timeoutSeconds = %q, want %q", tc.url, tc.server, v, tc.want)
		}
		if u.String() != tc.url {
			t.Errorf("the caller's request was changed in place: %s", u)
		}
	}
}
