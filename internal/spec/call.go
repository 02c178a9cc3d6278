package spec

import (
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Call is the engine's side of one handler call: what package handlers
// turns into the Cause the user's function receives, and what the function
// hands back besides its result (Events, sub-handlers). The fields mirror
// Cause's; see there.
type Call struct {
	Reason      string
	HandlerID   string
	Name        string
	Namespace   string
	UID         types.UID
	Labels      map[string]string
	Annotations map[string]string
	Old, New    any
	Diff        Diff
	Patch       *Patch
	Client      client.Client
	Memo        *Memo
	Retry       int
	Started     time.Time
	Runtime     time.Duration
	Log         logr.Logger
	Param       any
	Event       string
	Indexes     *Indexes

	// Post posts an Event about the object; nil where there is no object.
	Post func(eventType, reason, message string)

	// Subs are the sub-handlers the call registered, and subProblems what
	// was wrong with the bad ones.
	Subs        []*Handler
	subProblems []string
}

// AddSub records a sub-handler registered during the call, or, with
// problems, a bad one.
func (c *Call) AddSub(h *Handler, problems ...string) {
	if len(problems) > 0 {
		c.subProblems = append(c.subProblems, problems...)
		return
	}
	c.Subs = append(c.Subs, h)
}

// SubErr reports the bad sub-handler registrations of the call, or nil.
func (c *Call) SubErr() error {
	if len(c.subProblems) == 0 {
		return nil
	}
	return errors.New(joinProblems(c.subProblems))
}

// Review is the engine's side of one admission handler call: what package
// handlers turns into the AdmissionRequest, and the warnings it adds.
type Review struct {
	Operation   string
	SubResource string
	DryRun      bool
	UserInfo    authenticationv1.UserInfo
	Name        string
	Namespace   string
	HandlerID   string
	Param       any
	Log         logr.Logger
	Patch       *Patch
	Raw         *admissionv1.AdmissionRequest
	// Warnings are the warnings the handler added.
	Warnings []string
}

// DaemonControl connects a running daemon with the engine that runs it.
type DaemonControl struct {
	// Call carries the object's identity, log, memo and param; the engine
	// sets Retry before each run.
	Call *Call
	// Latest returns the newest version of the object, in the handler's Go
	// type.
	Latest func() client.Object

	once     sync.Once
	stopping chan struct{}
	mu       sync.Mutex
	reason   string
}

// NewDaemonControl returns a control for one daemon.
func NewDaemonControl(c *Call, latest func() client.Object) *DaemonControl {
	return &DaemonControl{Call: c, Latest: latest, stopping: make(chan struct{})}
}

// Stop asks the daemon to stop; later calls keep the first reason.
func (d *DaemonControl) Stop(reason string) {
	d.once.Do(func() {
		d.mu.Lock()
		d.reason = reason
		d.mu.Unlock()
		close(d.stopping)
	})
}

// Stopping is closed once Stop was called.
func (d *DaemonControl) Stopping() <-chan struct{} { return d.stopping }

// Reason is the reason given to Stop, or "".
func (d *DaemonControl) Reason() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reason
}
