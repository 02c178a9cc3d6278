package robustness

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Timing of operator processes.
const (
	// readyTimeout bounds the wait for a process to have its caches in sync.
	readyTimeout = 60 * time.Second
	// gracePeriod is how long a process may take to stop after SIGTERM
	// before it gets SIGKILL, as a Pod's terminationGracePeriodSeconds.
	gracePeriod = 30 * time.Second
)

// operator is an operator process of a run: in this process (an
// envtest.Operator) or a process of its own (a child).
type operator interface {
	// Stop stops the operator gracefully and waits until it has.
	Stop() error
}

// child is an operator process of its own: the test binary run again with
// KilleeEnv set.
type child struct {
	cmd    *exec.Cmd
	out    *tail         // its stdout and stderr, the end of them
	exited chan struct{} // closed once it is gone and reaped
	once   sync.Once     // the one signal that ends it
}

// startChild starts operator process p of the run; ready is closed when
// it reports its caches in sync.
func (r *runner) startChild(p int, ready <-chan struct{}) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(killeeSpec{Class: r.class.Name, Storage: r.storage, Namespace: r.t.Namespace,
		Run: r.run, Process: p, Proxy: r.px.URL(), Reports: r.reports.url})
	if err != nil {
		return nil, err
	}
	c := &child{cmd: exec.Command(exe), out: &tail{}, exited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), KilleeEnv+"="+string(spec))
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	dieWithParent(c.cmd)
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = c.cmd.Wait() // how it ended shows in its output
		close(c.exited)
	}()
	r.mu.Lock()
	r.children[p] = c
	r.mu.Unlock()
	select {
	case <-ready:
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("the process exited (%s): %s", c.cmd.ProcessState, c.out)
	case <-time.After(readyTimeout):
		c.Kill()
		return nil, fmt.Errorf("the process was not ready within %s: %s", readyTimeout, c.out)
	}
}

// Kill sends SIGKILL and waits until the process is gone. It reports
// whether this call ended it (not an earlier Kill or Stop, or its own
// exit).
func (c *child) Kill() bool {
	killed := false
	c.once.Do(func() { killed = c.cmd.Process.Signal(syscall.SIGKILL) == nil })
	<-c.exited
	return killed
}

// Stop sends SIGTERM and waits until the process is gone; after
// gracePeriod it kills it.
func (c *child) Stop() error {
	c.once.Do(func() { _ = c.cmd.Process.Signal(syscall.SIGTERM) })
	select {
	case <-c.exited:
	case <-time.After(gracePeriod):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("the process did not stop within %s of SIGTERM: %s", gracePeriod, c.out)
	}
	if !c.cmd.ProcessState.Success() {
		return fmt.Errorf("the process ended with %s: %s", c.cmd.ProcessState, c.out)
	}
	return nil
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		t.b = t.b[len(t.b)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// reportServer is where the operator processes of a run report their
// handler calls, their daemons' and timers' runs, and that they are ready.
type reportServer struct {
	url    string
	srv    *http.Server
	served chan struct{}
}

// serveReports starts the run's report server.
func (r *runner) serveReports() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("the report server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", answer(r.begin))
	mux.HandleFunc("POST /end", func(w http.ResponseWriter, req *http.Request) {
		var e endReport
		if decode(w, req, &e) {
			r.end(e.ID, e.Outcome, e.Patched)
		}
	})
	mux.HandleFunc("POST /daemon", answer(r.daemon))
	mux.HandleFunc("POST /timer", answer(r.timer))
	mux.HandleFunc("POST /ready", func(w http.ResponseWriter, req *http.Request) {
		var rr readyReport
		if decode(w, req, &rr) {
			r.mu.Lock()
			if ch := r.ready[rr.Process]; ch != nil {
				close(ch)
				delete(r.ready, rr.Process)
			}
			r.mu.Unlock()
		}
	})
	s := &reportServer{url: "http://" + ln.Addr().String(), served: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // ends with Close
	}()
	r.reports = s
	return nil
}

// Close stops the report server.
func (s *reportServer) Close() error {
	err := s.srv.Close()
	<-s.served
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// answer serves a report the process waits on: it decodes an In, hands
// it to fn and sends fn's reply back, or 410 Gone when fn says the
// reporting process was killed meanwhile.
func answer[In, Out any](fn func(In) (Out, bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		var in In
		if !decode(w, req, &in) {
			return
		}
		out, ok := fn(in)
		if !ok {
			http.Error(w, "the process was killed", http.StatusGone)
			return
		}
		_ = json.NewEncoder(w).Encode(out) // a process killed meanwhile does not read it
	}
}

// decode decodes a report into v, or answers 400 and returns false.
func decode(w http.ResponseWriter, req *http.Request, v any) bool {
	if err := json.NewDecoder(req.Body).Decode(v); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}
