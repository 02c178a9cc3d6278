package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// APIServer is a kube-apiserver that RestartAPIServer started again.
type APIServer struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	out  tail          // the end of its standard error
}

// RestartAPIServer stops the kube-apiserver that serves cfg as the kubelet
// stops a container in a rolling update of a control plane (SIGTERM, and
// SIGKILL after grace: kube-apiserver drains open watches for up to its
// request timeout, a minute), and starts it again with
// the same command line: the same port, certificates and etcd, so that its
// clients reconnect as to the old one and find everything etcd kept. It
// finds the process by its --secure-port in Linux's /proc. Stop the new
// process before the control plane: the control plane only knows the old
// one.
func RestartAPIServer(ctx context.Context, cfg *rest.Config, grace time.Duration) (*APIServer, error) {
	pid, args, err := findAPIServer(cfg)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver %d: %w", pid, err)
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if waitFor(gctx, func() bool { return !running(pid) }) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if err := waitFor(ctx, func() bool { return !running(pid) }); err != nil {
			return nil, fmt.Errorf("kube-apiserver %d did not stop: %w", pid, err)
		}
	}
	s := &APIServer{cmd: exec.Command(args[0], args[1:]...), done: make(chan struct{})}
	s.cmd.Stderr = &s.out
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	go func() {
		defer close(s.done)
		_ = s.cmd.Wait()
	}()
	if err := waitReady(ctx, cfg); err != nil {
		return nil, errors.Join(fmt.Errorf("kube-apiserver did not become ready again: %w; it wrote: %s", err, s.out.String()), s.Stop())
	}
	return s, nil
}

// Stop stops the restarted API server and waits for it to exit.
func (s *APIServer) Stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return nil
}

// findAPIServer returns the pid and command line of the kube-apiserver
// that listens on cfg's port.
func findAPIServer(cfg *rest.Config) (int, []string, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return 0, nil, fmt.Errorf("the API server's address %q: %w", cfg.Host, err)
	}
	flag := []byte("--secure-port=" + u.Port())
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil || !bytes.HasSuffix(bytes.SplitN(data, []byte{0}, 2)[0], []byte("kube-apiserver")) {
			continue
		}
		var args []string
		found := false
		for _, a := range bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0}) {
			args = append(args, string(a))
			found = found || bytes.Equal(a, flag)
		}
		if found {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid, args, err
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver with %s (this needs Linux's /proc)", flag)
}

// running says whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the state follows the command's name in parentheses
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && i+2 < len(data) && data[i+2] != 'Z'
}

// waitReady waits until the API server of cfg answers /readyz with 200.
func waitReady(ctx context.Context, cfg *rest.Config) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	return waitFor(ctx, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/readyz", http.NoBody)
		if err != nil {
			return false
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls done every 100 ms until it is true or ctx ends, for at
// most a minute.
func waitFor(ctx context.Context, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// tail keeps the last 4 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
