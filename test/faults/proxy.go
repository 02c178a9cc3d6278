package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// Faults say what goes wrong with the requests a Proxy forwards. The zero
// value forwards every request untouched.
type Faults struct {
	// Fraction of the requests Match accepts that fail with one of
	// Statuses instead of being forwarded, from 0 to 1.
	Fraction float64
	// Statuses are the HTTP status codes failed requests get, picked at
	// random; the body is a metav1.Status with the matching reason, as the
	// API server would send. Default: 500.
	Statuses []int
	// RetryAfter is sent as the Retry-After header (in whole seconds,
	// rounded up) with 429 responses, and with 5xx responses when
	// RetryAfter5xx is set. client-go waits that long and retries such
	// responses by itself (up to 10 times); others reach the caller.
	RetryAfter    time.Duration
	RetryAfter5xx bool
	// Delay holds every request Match accepts for this long before it is
	// forwarded or failed.
	Delay time.Duration
	// LoseFraction of the requests Match accepts and Fraction does not
	// fail, from 0 to 1, are forwarded and their response lost as Loss
	// says: the API server applied the write, and the client cannot tell.
	LoseFraction float64
	// Loss is how a response is lost. Default: LossReset.
	Loss Loss
	// Match selects the requests the faults apply to. Default: all.
	Match func(*http.Request) bool
}

// Loss is how the proxy loses the response of a request it forwarded.
type Loss string

// The ways a response is lost.
const (
	// LossReset resets the client's connection once the API server has
	// answered, as a connection dropped on its way back does.
	LossReset Loss = "reset"
	// Loss502 answers 502 Bad Gateway instead of the API server's answer,
	// as a load balancer that lost the upstream connection does.
	Loss502 Loss = "502"
)

// Request is one request the proxy saw, as Proxy.Requests reports it.
type Request struct {
	// At is when the request arrived.
	At time.Time
	// Method and Path are the request's; Path has no query.
	Method, Path string
	// Watch is true for watch requests (?watch=true).
	Watch bool
	// TimeoutSeconds is the timeout a watch asked the API server for.
	TimeoutSeconds int
	// InitialEvents is true for a watch that asks for every current object
	// first (sendInitialEvents=true): client-go's list through a watch.
	InitialEvents bool
	// Status is the status code the client got: from the API server, or
	// made up when Injected. 0 when the connection was dropped or the
	// upstream could not be reached.
	Status int
	// Injected is true when the proxy failed the request itself.
	Injected bool
	// Lost is true when the API server answered the request with Status
	// and the proxy lost that answer (Faults.LoseFraction).
	Lost bool
}

// Write reports whether the request changes something.
func (r Request) Write() bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Resource returns the resource of the request's path, with the
// subresource if any ("kopfexamples", "kopfexamples/status"), and the
// object's name ("" for collections).
func (r Request) Resource() (resource, name string) {
	parts := strings.Split(strings.Trim(r.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return r.Path, ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return parts[0], ""
	case 2:
		return parts[0], parts[1]
	default:
		return parts[0] + "/" + parts[2], parts[1]
	}
}

// Proxy is a fault-injecting HTTP proxy in front of a Kubernetes API server.
// An operator whose rest.Config points at it (Config) talks plain HTTP to
// the proxy, which forwards to the API server with the credentials it was
// made with. While it runs, a test can make a fraction of requests fail or
// wait (SetFaults), take the API server away (Outage, Restore), and stall
// watch streams (StallWatches, ReleaseWatches, EndWatches). Random choices
// come from a seeded generator, so a seed gives the same sequence of
// choices (though concurrent requests may draw them in a different order).
//
// A Proxy is safe for concurrent use. Close stops it and every goroutine it
// started.
type Proxy struct {
	url       string
	transport http.RoundTripper
	srv       *http.Server
	rp        *httputil.ReverseProxy
	served    chan struct{} // closed when Serve has returned
	inflight  sync.WaitGroup

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change of down or stalled
	rng      *rand.Rand
	faults   Faults
	down     bool
	stalled  bool
	closed   bool
	conns    map[net.Conn]struct{} // from clients
	upstream map[net.Conn]struct{} // to the API server
	watches  map[*watchBody]struct{}
	requests []Request
	refused  []time.Time // connections reset on arrival during an outage
}

// New starts a proxy on a free port of 127.0.0.1 that forwards to the API
// server of cfg with cfg's credentials. seed seeds its random choices.
func New(cfg *rest.Config, seed uint64) (*Proxy, error) {
	p := &Proxy{
		served:   make(chan struct{}),
		changed:  make(chan struct{}),
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		conns:    map[net.Conn]struct{}{},
		upstream: map[net.Conn]struct{}{},
		watches:  map[*watchBody]struct{}{},
	}
	upstream := rest.CopyConfig(cfg)
	// A Proxy function makes client-go build a transport of our own rather
	// than share its cached one; our own dialer lets Close close every
	// connection to the API server.
	upstream.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	upstream.Dial = p.dial
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("fault proxy: a transport for %s: %w", cfg.Host, err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("fault proxy: the API server's address %q: %w", cfg.Host, err)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listening: %w", err)
	}
	p.url, p.transport = "http://"+ln.Addr().String(), rt
	quiet := log.New(io.Discard, "", 0)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		},
		Transport:      rt,
		FlushInterval:  -1, // watch events go through as they come
		ErrorLog:       quiet,
		ModifyResponse: p.modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.note(r, 0)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ErrorLog:          quiet,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         p.connState,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(&listener{Listener: ln, p: p})
	}()
	return p, nil
}

// URL is the proxy's address, http://127.0.0.1:<port>.
func (p *Proxy) URL() string { return p.url }

// Config returns a rest.Config that reaches the API server through the
// proxy, with no credentials (the proxy adds its own) and with client-go's
// defaults for everything else, rate limits included (QPS 5, burst 10 when
// left at zero): set QPS and Burst as the operator under test would.
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{Host: p.url}
}

// SetFaults replaces the faults in force; Faults{} turns them off.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Outage takes the API server away as far as the proxy's clients can tell:
// every open connection is reset, and so is every new one, until Restore.
func (p *Proxy) Outage() {
	p.mu.Lock()
	p.down = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.signalLocked()
	p.mu.Unlock()
	for _, c := range conns {
		reset(c)
	}
}

// Restore ends an Outage: new connections are served again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.signalLocked()
}

// StallWatches makes every watch stream, open or opened later, go silent:
// the connection stays open, and what the API server sends is held back
// until ReleaseWatches or dropped by EndWatches. This is what a client sees
// behind a load balancer that lost the path to the API server.
func (p *Proxy) StallWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
	p.signalLocked()
}

// ReleaseWatches ends a stall: what was held back is delivered, late.
func (p *Proxy) ReleaseWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	p.signalLocked()
}

// SilenceOpenWatches makes the watch streams open now go silent for good:
// their connections stay open, and nothing the API server sends on them
// arrives, until the client gives up on them. Watches opened later are not
// affected. This is a connection whose path to the API server was lost
// without either end noticing.
func (p *Proxy) SilenceOpenWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.watches {
		w.silenced = true
	}
	p.signalLocked()
}

// EndWatches ends every open watch stream cleanly, as the API server does
// when a watch's timeout is up, and ends a stall; whatever a stalled stream
// held back is dropped. Clients then watch again from the last version
// they saw.
func (p *Proxy) EndWatches() {
	p.mu.Lock()
	p.stalled = false
	watches := make([]*watchBody, 0, len(p.watches))
	for w := range p.watches {
		watches = append(watches, w)
	}
	p.signalLocked()
	p.mu.Unlock()
	for _, w := range watches {
		w.end()
	}
}

// OpenWatches returns the watch requests whose streams are open now.
func (p *Proxy) OpenWatches() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, 0, len(p.watches))
	for w := range p.watches {
		out = append(out, w.req)
	}
	return out
}

// Requests returns every request seen so far, in order of arrival.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Refused returns when each connection that arrived during an Outage came
// (and was reset before a request could be read): Requests cannot list
// what clients tried meanwhile, but each attempt opens a connection of its
// own, since the last one was reset, so these are the attempts.
func (p *Proxy) Refused() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.refused...)
}

// Close stops the proxy: the listener, every connection, every stream, and
// the connections to the API server. It waits for its goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.signalLocked()
	watches := make([]*watchBody, 0, len(p.watches))
	for w := range p.watches {
		watches = append(watches, w)
	}
	p.mu.Unlock()
	for _, w := range watches {
		w.end()
	}
	err := p.srv.Close()
	<-p.served
	p.inflight.Wait()
	utilnet.CloseIdleConnectionsFor(p.transport)
	p.mu.Lock()
	upstream := make([]net.Conn, 0, len(p.upstream))
	for c := range p.upstream {
		upstream = append(upstream, c)
	}
	p.mu.Unlock()
	for _, c := range upstream {
		_ = c.Close()
	}
	return err
}

// dial opens a connection to the API server and keeps it in p.upstream
// until it is closed.
func (p *Proxy) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, p: p}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return nil, errors.New("the fault proxy is closed")
	}
	p.upstream[tc] = struct{}{}
	return tc, nil
}

// trackedConn is a connection to the API server that leaves p.upstream
// when closed.
type trackedConn struct {
	net.Conn
	p *Proxy
}

func (c *trackedConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.upstream, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

// serveHTTP applies the faults to one request and forwards it.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Done()
	r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, time.Now()))
	status, delay, loss := p.decide(r)
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			p.note(r, 0)
			return
		}
	}
	switch {
	case status != 0:
		p.fail(w, r, status)
	case loss != "":
		p.forwardAndLose(w, r, loss)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// forwardAndLose forwards the request, waits for the API server's answer,
// and loses it as loss says.
func (p *Proxy) forwardAndLose(w http.ResponseWriter, r *http.Request, loss Loss) {
	p.rp.ServeHTTP(&discard{header: http.Header{}}, r.WithContext(context.WithValue(r.Context(), lostKey{}, true)))
	if loss == LossReset {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				reset(c)
				return
			}
		}
	}
	w.WriteHeader(http.StatusBadGateway)
}

// discard is a ResponseWriter that drops the response.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// decide draws whether the request fails, and with which status, or has
// its response lost, and how long it waits.
func (p *Proxy) decide(r *http.Request) (status int, delay time.Duration, loss Loss) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	if f.Match != nil && !f.Match(r) {
		return 0, 0, ""
	}
	if f.Fraction > 0 && p.rng.Float64() < f.Fraction {
		status = http.StatusInternalServerError
		if len(f.Statuses) > 0 {
			status = f.Statuses[p.rng.IntN(len(f.Statuses))]
		}
	}
	if status == 0 && f.LoseFraction > 0 && p.rng.Float64() < f.LoseFraction {
		loss = f.Loss
		if loss == "" {
			loss = LossReset
		}
	}
	return status, f.Delay, loss
}

// fail answers a request with an injected error, as the API server would.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, code int) {
	p.mu.Lock()
	f := p.faults
	p.mu.Unlock()
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reasonFor(code),
		Message:  fmt.Sprintf("injected by the fault proxy: %d %s", code, http.StatusText(code)),
	}
	retryAfter := f.RetryAfter > 0 && (code == http.StatusTooManyRequests || code >= 500 && f.RetryAfter5xx)
	if retryAfter {
		secs := int((f.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(secs)}
	}
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
	p.noteInjected(r, code)
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	return metav1.StatusReasonInternalError
}

// modifyResponse records forwarded requests and puts watch streams under
// the proxy's control.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	r := resp.Request
	p.note(r, resp.StatusCode)
	if !isWatch(r) || resp.StatusCode != http.StatusOK {
		return nil
	}
	w := &watchBody{ctx: r.Context(), rc: resp.Body, p: p, req: p.describe(r, resp.StatusCode), ended: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the fault proxy is closing")
	}
	p.watches[w] = struct{}{}
	resp.Body = w
	return nil
}

func (p *Proxy) note(r *http.Request, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, p.describe(r, status))
}

func (p *Proxy) noteInjected(r *http.Request, status int) {
	req := p.describe(r, status)
	req.Injected = true
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
}

func (p *Proxy) describe(r *http.Request, status int) Request {
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Watch: isWatch(r), Status: status}
	if req.Watch {
		req.TimeoutSeconds, _ = strconv.Atoi(r.URL.Query().Get("timeoutSeconds"))
		req.InitialEvents = r.URL.Query().Get("sendInitialEvents") == "true"
	}
	if at, ok := r.Context().Value(arrivalKey{}).(time.Time); ok {
		req.At = at
	}
	req.Lost = status != 0 && r.Context().Value(lostKey{}) != nil
	return req
}

func isWatch(r *http.Request) bool {
	return r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" ||
		strings.Contains(r.URL.Path, "/watch/")
}

// signalLocked wakes everything waiting for a change of the proxy's state.
func (p *Proxy) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// holding reports whether watch stream w must hold its data back now, and
// a channel closed at the next change.
func (p *Proxy) holding(w *watchBody) (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return (p.stalled || w.silenced) && !p.closed, p.changed
}

// refuseIfDown reports whether the proxy is down, and then notes a
// connection refused at now.
func (p *Proxy) refuseIfDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		p.refused = append(p.refused, time.Now())
	}
	return p.down
}

func (p *Proxy) connState(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// arrivalKey keys the arrival time of a request in its context.
type arrivalKey struct{}

// lostKey marks a request whose response the proxy loses.
type lostKey struct{}

// listener resets new connections while the proxy is down.
type listener struct {
	net.Listener
	p *Proxy
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.p.refuseIfDown() {
			reset(c)
			continue
		}
		return c, nil
	}
}

// reset closes a connection so that the peer sees "connection reset".
func reset(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}

// watchBody is the body of a watch response on its way through the proxy.
// While the proxy stalls watches, data read from the API server is held
// back; end finishes the stream with a clean EOF.
type watchBody struct {
	ctx     context.Context // the request's: done when the client goes
	rc      io.ReadCloser
	p       *Proxy
	req     Request
	endOnce sync.Once
	ended   chan struct{}
	// silenced: held back for good (SilenceOpenWatches); guarded by p.mu.
	silenced bool
}

func (w *watchBody) Read(buf []byte) (int, error) {
	select {
	case <-w.ended:
		return 0, io.EOF
	default:
	}
	n, err := w.rc.Read(buf)
	// Data that came in while stalled waits here until the stall ends.
	for {
		hold, changed := w.p.holding(w)
		if !hold {
			break
		}
		select {
		case <-changed:
		case <-w.ended:
			return 0, io.EOF
		case <-w.ctx.Done():
			return 0, w.ctx.Err()
		}
	}
	select {
	case <-w.ended:
		return 0, io.EOF
	default:
	}
	return n, err
}

func (w *watchBody) end() {
	w.endOnce.Do(func() {
		close(w.ended)
		_ = w.rc.Close() // unblocks a Read waiting for the API server
	})
}

func (w *watchBody) Close() error {
	w.p.mu.Lock()
	delete(w.p.watches, w)
	w.p.mu.Unlock()
	w.endOnce.Do(func() { close(w.ended) })
	return w.rc.Close()
}
