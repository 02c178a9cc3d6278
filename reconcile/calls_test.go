package reconcile_test

import (
	"fmt"
	"sync"

	"github.com/gopf-dev/gopf/handlers"
)

// call is what a test handler saw.
type call struct {
	Handler string
	Reason  handlers.Reason
	Retry   int
	Diff    string
	Old     any
	New     any
}

// calls records handler calls for assertions; safe for concurrent use.
type calls struct {
	mu   sync.Mutex
	list []call
}

func (cs *calls) add(c *handlers.Cause) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.list = append(cs.list, call{Handler: c.HandlerID, Reason: c.Reason, Retry: c.Retry, Diff: fmt.Sprint(c.Diff), Old: c.Old, New: c.New})
}

// of returns the calls of one handler.
func (cs *calls) of(handler string) []call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []call
	for _, c := range cs.list {
		if c.Handler == handler {
			out = append(out, c)
		}
	}
	return out
}

// count returns how many calls one handler got.
func (cs *calls) count(handler string) int { return len(cs.of(handler)) }
