package envtest

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// RequestCounter counts the requests a client sends to the API server, by
// verb and resource, so tests can assert how many writes an operator makes.
// Install it on a rest.Config with Wrap (RunOperator does that when
// OperatorOptions.Requests is set). It is safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int // "VERB resource[/subresource]"
}

// Wrap makes cfg's transport count through c. cfg is changed in place.
func (c *RequestCounter) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			c.add(req.Method, resourceOf(req.URL.Path), req.URL.Query().Get("watch") == "true")
			return rt.RoundTrip(req)
		})
	})
}

func (c *RequestCounter) add(method, resource string, watch bool) {
	verb := method
	if watch {
		verb = "WATCH"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[verb+" "+resource]++
}

// Writes counts the requests that change something (POST, PUT, PATCH,
// DELETE) to exactly the resources named, each written as Count takes it:
// "kopfexamples" counts writes to the objects themselves, not to their
// status, which is "kopfexamples/status"; Writes("kopfexamples",
// "kopfexamples/status") counts both, each request once. With no resource
// (or only ""), it counts every write. Reviews (access, rules and token
// reviews, as gopf's permission check and metrics authorization send) are
// questions sent as POST that store nothing: they are not writes.
func (c *RequestCounter) Writes(resources ...string) int {
	all := len(resources) == 0 || len(resources) == 1 && resources[0] == ""
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, v := range c.counts {
		verb, res, _ := strings.Cut(key, " ")
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if !strings.HasSuffix(res, "reviews") && (all || slices.Contains(resources, res)) {
				n += v
			}
		}
	}
	return n
}

// Count returns the number of requests with the verb (GET, LIST is a GET of a
// collection and counted as GET, WATCH, POST, PUT, PATCH, DELETE) to the
// resource (e.g. "kopfexamples/status").
func (c *RequestCounter) Count(verb, resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[verb+" "+resource]
}

// Snapshot returns all counts, keyed "VERB resource", sorted for printing.
func (c *RequestCounter) Snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.counts))
	for k, v := range c.counts {
		out = append(out, k+"="+strconv.Itoa(v))
	}
	sort.Strings(out)
	return out
}

// Reset forgets all counts.
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = nil
}

// resourceOf extracts "resource" or "resource/subresource" from an API path
// such as /apis/kopf.dev/v1/namespaces/ns/kopfexamples/name/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:] // apis/group/version
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return ""
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
