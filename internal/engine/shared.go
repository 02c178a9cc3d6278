package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/gate"
	"github.com/gopf-dev/gopf/internal/logs"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Shared is what the controllers of one registry share: the indexes, and
// whether each index has seen the initial list of its kind.
type Shared struct {
	Set      *contract.Set
	operator *spec.Operator // what the webhook engine shares
	Indexes  *spec.Indexes  // operator.Indexes
	Memo     *spec.Memo     // operator.Memo: the operator-level handlers' memo
	client   client.Client
	Gate     *gate.Gate
	Scope    *scope.Scope
	Mu       sync.Mutex
	Watchers []IndexFeeder   // the watchers that fill indexes
	ctx      context.Context // the manager's, once it runs
	busy     atomic.Int64    // reconciles, timer runs and daemons in progress
	// ShardCache, when the operator is a shard of a ring, holds only this
	// shard's objects; the kinds read and watch through it instead of the
	// manager's cache. Nil without sharding.
	ShardCache cache.Cache
	// events posts the Events of every kind (logs.Recorder), made once
	// with the manager: kinds that appear later share it.
	events recorder.EventRecorder
}

// NewShared makes what the controllers of reg on mgr share, with the
// operator memo and indexes the webhook engine shares too (see
// spec.Operator), and forgets those when the manager stops.
func NewShared(mgr manager.Manager, reg *handlers.Registry, sc *scope.Scope, opts Options) (*Shared, error) {
	set := contract.SetOf(reg)
	op := set.OperatorOf(mgr)
	for k, v := range opts.Memo {
		op.Memo.Set(k, v)
	}
	sh := &Shared{Set: set, operator: op, Indexes: op.Indexes, Gate: &gate.Gate{}, Scope: sc, Memo: op.Memo, client: mgr.GetClient()}
	var err error
	if sh.events, err = logs.Recorder(mgr, opts.EventsOff, opts.EventComponent); err != nil {
		return nil, err
	}
	forget := manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		set.DropOperator(mgr)
		return nil
	})
	if err := mgr.Add(forget); err != nil {
		return nil, fmt.Errorf("gopf: adding the operator's memory: %w", err)
	}
	return sh, nil
}

// OperatorCall builds the call of an operator-level handler: the
// operator's memo, indexes and client, and no object.
func (s *Shared) OperatorCall(h *contract.Handler, log logr.Logger) *handlers.Cause {
	c := &handlers.Cause{HandlerID: h.Options.ID, Param: h.Options.Param, Started: time.Now(),
		Log: log.WithValues("handler", h.Options.ID), Memo: (*handlers.Memo)(s.Memo), Indexes: (*handlers.Indexes)(s.Indexes), Client: s.client}
	s.Set.BindCause(c, &contract.Extras{})
	return c
}

// Idle waits until no reconcile is in progress, or until the timeout.
func (s *Shared) Idle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.busy.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Pause stops handlers from starting, for reason (the peering's host).
func (s *Shared) Pause(reason string) { s.Gate.Pause(reason) }

// Resume lets handlers start again.
func (s *Shared) Resume() { s.Gate.Resume() }

// Paused is why the operator is paused, "" when it is not.
func (s *Shared) Paused() string { return s.Gate.Paused() }

// Busy reports whether reconciles, timer runs or daemons are running.
func (s *Shared) Busy() bool { return s.busy.Load() > 0 }

// SetContext records the manager's context once it runs.
func (s *Shared) SetContext(ctx context.Context) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.ctx = ctx
}

// Context returns the manager's context, or nil before it runs.
func (s *Shared) Context() context.Context {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.ctx
}

// indexesReady reports whether every index has seen its initial list.
func (s *Shared) indexesReady() bool {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	for _, w := range s.Watchers {
		if !w.Synced() {
			return false
		}
	}
	return true
}

// IndexFeeder is a watcher that fills indexes.
type IndexFeeder interface {
	// Synced reports whether it has handled its kind's first list.
	Synced() bool
}
