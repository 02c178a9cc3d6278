//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// request is one API request of an operator, from the audit log.
type request struct {
	user     string
	verb     string // the API verb: get, list, watch, create, update, patch, delete, ...
	resource string // resource[/subresource], or the path of a non-resource request
	code     int    // the response code; 0 for a watch still running
	at       time.Time
}

// isWrite reports whether the request changes something. Reviews (access,
// rules and token reviews, such as gopf's permission check at start-up) are
// created but store nothing: they are requests, not writes, as
// envtest.RequestCounter counts them.
func (r request) isWrite() bool {
	if strings.HasSuffix(r.resource, "reviews") {
		return false
	}
	switch r.verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// auditEvent holds the fields of an audit.k8s.io/v1 Event the benchmark uses.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// auditLog reads the API server's audit log as it grows. An audit entry is
// written per stage of a request (ResponseStarted for watches, then
// ResponseComplete); each request is counted once.
type auditLog struct {
	path     string
	offset   int64
	partial  []byte
	seen     map[string]bool
	requests []request
}

func newAuditLog(path string) *auditLog {
	return &auditLog{path: path, seen: map[string]bool{}}
}

// poll reads the lines appended since the last call.
func (a *auditLog) poll() error {
	f, err := os.Open(a.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	a.offset += int64(len(data))
	data = append(a.partial, data...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if err := a.add(data[:i]); err != nil {
			return err
		}
		data = data[i+1:]
	}
	a.partial = append([]byte(nil), data...)
	return nil
}

func (a *auditLog) add(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var ev auditEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return fmt.Errorf("reading the audit log %s: %w", a.path, err)
	}
	if a.seen[ev.AuditID] {
		return nil
	}
	a.seen[ev.AuditID] = true
	r := request{user: ev.User.Username, verb: ev.Verb, at: ev.RequestReceivedTimestamp}
	if ev.ResponseStatus != nil {
		r.code = ev.ResponseStatus.Code
	}
	switch {
	case ev.ObjectRef != nil && ev.ObjectRef.Subresource != "":
		r.resource = ev.ObjectRef.Resource + "/" + ev.ObjectRef.Subresource
	case ev.ObjectRef != nil:
		r.resource = ev.ObjectRef.Resource
	default:
		r.resource = ev.RequestURI
		if u, err := url.Parse(ev.RequestURI); err == nil {
			r.resource = u.Path
		}
	}
	a.requests = append(a.requests, r)
	return nil
}

// of returns the requests of user, in log order.
func (a *auditLog) of(user string) []request {
	var out []request
	for _, r := range a.requests {
		if r.user == user {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls the log until a request of user satisfies match.
func (a *auditLog) waitFor(ctx context.Context, user string, match func(request) bool) error {
	for {
		if err := a.poll(); err != nil {
			return err
		}
		for _, r := range a.requests {
			if r.user == user && match(r) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// settle polls the log until it has not grown for quiet, so that the last
// requests of a stopped operator are in.
func (a *auditLog) settle(ctx context.Context, quiet time.Duration) error {
	last, since := a.offset, time.Now()
	for time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if err := a.poll(); err != nil {
			return err
		}
		if a.offset != last {
			last, since = a.offset, time.Now()
		}
	}
	return nil
}
