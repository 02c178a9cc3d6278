//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// apiProfileChunk is the length of one CPU profile of kube-apiserver. A
// phase is profiled in chunks taken back to back, because the API server's
// profile endpoint takes its length up front; the chunk running when the
// phase ends is cut short and lost, and each chunk's request and answer
// leave a gap, so a phase's profile covers most of it (about 90% of a busy
// 30-second phase: its Duration says how much). It shows where the API
// server's CPU goes; the phase's CPU time is the table's.
const apiProfileChunk = time.Second

// apiProfile is a CPU profile of kube-apiserver, taken while a phase runs.
type apiProfile struct {
	cancel context.CancelFunc
	done   chan error
}

// profileAPIServer starts profiling kube-apiserver's CPU, as the
// administrator, until stop is called, which writes the profile to path.
// Kubernetes serves the profiles of net/http/pprof at /debug/pprof to
// cluster administrators.
func (cp *controlPlane) profileAPIServer(path string) (*apiProfile, error) {
	hc, err := rest.HTTPClientFor(cp.admin)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cp.admin.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(apiProfileChunk/time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	p := &apiProfile{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- collectProfiles(ctx, hc, url, path) }()
	return p, nil
}

// stop ends the profile and writes it.
func (p *apiProfile) stop() error {
	p.cancel()
	return <-p.done
}

// collectProfiles takes profiles from url back to back until ctx ends,
// then writes them, merged, to path.
func collectProfiles(ctx context.Context, hc *http.Client, url, path string) error {
	var chunks []*profile.Profile
	for ctx.Err() == nil {
		data, err := fetchProfile(ctx, hc, url)
		if ctx.Err() != nil {
			break // the chunk cut short by the end of the phase
		}
		if err != nil {
			return fmt.Errorf("profiling kube-apiserver: %w", err)
		}
		if data == nil {
			continue // the profiler was still busy
		}
		p, err := profile.ParseData(data)
		if err != nil {
			return fmt.Errorf("reading a profile of kube-apiserver: %w", err)
		}
		chunks = append(chunks, p)
	}
	if len(chunks) == 0 {
		return nil // a phase shorter than a chunk
	}
	merged, err := profile.Merge(chunks)
	if err != nil {
		return fmt.Errorf("merging the profiles of kube-apiserver: %w", err)
	}
	var buf bytes.Buffer
	if err := merged.Write(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// errProfilerBusy is Go's answer while another CPU profile runs: the one
// cut short at the end of the previous phase, until the API server notices.
const errProfilerBusy = "cpu profiling already in use"

// fetchProfile takes one profile. It returns no data and no error when the
// profiler was busy, after a short wait.
func fetchProfile(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		if strings.Contains(string(data), errProfilerBusy) {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil, nil
		}
		return nil, errors.New(resp.Status + ": " + strings.TrimSpace(string(data)))
	}
	return data, nil
}
