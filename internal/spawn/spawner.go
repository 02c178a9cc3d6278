package spawn

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/logs"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Spawner runs the timers and daemons of one kind. It is a Runnable on the
// manager, so it runs only on the leader and stopping the manager stops
// every timer and daemon it started.
//
// Timers cost no goroutine while they wait: they sit in one queue (a heap
// served by one goroutine, dueQueue) and run on a fixed pool of workers;
// the queue never hands one timer to two workers, so a timer never
// overlaps itself. Daemons get a goroutine each, as long-running functions must.
//
// The spawner keeps no copy of the objects: a timer's run and a daemon's
// Object read the object from the cache the reconciles read (Options.Reader),
// so that what an operator holds per object is the cache's copy and a few
// fields of bookkeeping, as a reconciler that requeues itself would.
type Spawner struct {
	k    Kind
	opts Options
	log  logr.Logger
	seed maphash.Seed // of the essences' hashes

	mu      sync.Mutex
	ctx     context.Context // set by Start; nil before
	objects map[types.NamespacedName]*spawned
	queue   *dueQueue
	wg      sync.WaitGroup // timer workers and daemon stop escalations
}

// timerKey names one timer of one object.
type timerKey struct {
	obj types.NamespacedName
	id  string
}

// spawned is what the spawner knows of one object: its identity and its
// timers' and daemons' bookkeeping, not the object (read from the cache).
type spawned struct {
	uid       types.UID
	essence   uint64    // a hash of the essence last synced, to see it change
	changedAt time.Time // last change of the essence
	wanted    []*contract.Handler
	timers    []*timerState   // few: a slice costs less than a map
	daemons   []*daemonState  // as few: a slice too
	finished  map[string]bool // timers and daemons done for good in this process; nil while none
	// running counts the runs of its timers under way: a run stopped
	// meanwhile still holds the object, as a daemon does, until it returns.
	running int
}

type timerState struct {
	key      timerKey
	slot     queueSlot // its place in the queue
	reg      *contract.Handler
	first    time.Time      // start of the first run, the grid of sharp timers
	attempts int            // failed attempts of the current run
	started  time.Time      // first attempt of the current run
	ranFor   time.Time      // the change an idle-only timer last ran after
	due      time.Time      // when the scheduled run is due
	written  *writtenResult // the last result the timer wrote, nil before
	unsent   *unsentPatch   // what the last attempt could not write, nil if nothing
}

type daemonState struct {
	reg       *contract.Handler
	id        client.Object // the object's identity when the daemon started (Spawner.identity)
	started   time.Time     // the first attempt's start
	ctl       *spec.DaemonControl[*handlers.Cause]
	cancel    context.CancelFunc
	done      chan struct{} // closed when the goroutine returns
	abandoned chan struct{} // closed when gopf gives up waiting; made when the daemon is asked to stop
	escalated bool
}

// Kind is the controller of the kind whose timers and daemons a spawner
// runs: how it calls handlers and writes their outcome, and the gate of
// the operator (paused or not, and how busy).
type Kind interface {
	// ObjectFor is obj as handler r takes it (typed or unstructured).
	ObjectFor(r *contract.Handler, obj client.Object) (client.Object, error)
	// Cause is the cause of a call of r on obj, logging to log.
	Cause(r *contract.Handler, obj client.Object, log logr.Logger) *handlers.Cause
	// Call calls h with obj and c.
	Call(ctx context.Context, h *contract.Handler, obj client.Object, c *handlers.Cause) (any, error)
	// SendPatch applies a handler's patch to obj.
	SendPatch(ctx context.Context, obj client.Object, p *spec.Patch) error
	// FailedForGood reports that handler id failed for good on obj.
	FailedForGood(obj client.Object, id string, err error)
	// WakeUp makes the controller reconcile obj again.
	WakeUp(ctx context.Context, obj client.Object)
	// Open reports whether handlers may start: the operator is not paused.
	Open() bool
	// WhenPaused has f called each time the operator pauses, or stops.
	WhenPaused(f func())
	// Stopping reports whether the operator stops for good (a pause that
	// does not end).
	Stopping() bool
	// AddBusy counts running handlers: delta is 1 when one starts, -1 when it
	// returns.
	AddBusy(delta int64)
}

// Options configure a Spawner.
type Options struct {
	// Name names the kind in logs, metrics and the timer queue.
	Name string
	// Log is the kind's logger.
	Log logr.Logger
	// Workers is how many timers run at once.
	Workers int
	// DefaultBackoff is the delay before retrying a handler whose error did
	// not say how long to wait.
	DefaultBackoff time.Duration
	// Reader reads the kind's objects from the cache the reconciles read,
	// into objects NewObject makes. Required.
	Reader    client.Reader
	NewObject func() client.Object
}

// New makes the spawner of kind k's timers and daemons. It runs them once
// added to a manager (Start), on the objects Sync gives it. It panics
// without opts.Reader or opts.NewObject, a mistake of the engine's.
func New(k Kind, opts Options) *Spawner {
	if opts.Reader == nil || opts.NewObject == nil {
		panic("spawn.New: Options.Reader and Options.NewObject are required")
	}
	s := &Spawner{
		k:       k,
		opts:    opts,
		seed:    maphash.MakeSeed(),
		objects: map[types.NamespacedName]*spawned{},
		queue:   newDueQueue(),
	}
	k.WhenPaused(s.pause)
	return s
}

// pause stops every timer and daemon, as the operator pauses; reopening the
// gate reconciles every object, which starts them again. Daemons learn
// whether the operator pauses or exits.
func (s *Spawner) pause() {
	reason := handlers.StopOperatorPausing
	if s.k.Stopping() {
		reason = handlers.StopOperatorExiting
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, o := range s.objects {
		s.dropTimersLocked(o, nil)
		for _, d := range o.daemons {
			s.stopDaemonLocked(d, string(reason))
		}
		if len(o.daemons) == 0 {
			delete(s.objects, key)
		}
	}
}

// Start runs the timer workers and spawns what reconciles asked for before
// the spawner started; on stop it stops every daemon and timer and waits for
// them.
func (s *Spawner) Start(ctx context.Context) error {
	s.log = s.opts.Log.WithName("spawner")
	s.mu.Lock()
	s.ctx = ctx
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.queue.dispatch()
	}()
	for range s.opts.Workers {
		s.wg.Add(1)
		go s.worker()
	}
	for key, o := range s.objects {
		if obj := s.read(key, o.uid); obj != nil {
			s.spawnLocked(key, o, obj)
		}
	}
	s.mu.Unlock()

	<-ctx.Done()
	s.mu.Lock()
	var daemons []*daemonState
	for _, o := range s.objects {
		for _, d := range o.daemons {
			s.stopDaemonLocked(d, string(handlers.StopOperatorExiting))
			daemons = append(daemons, d)
		}
	}
	s.mu.Unlock()
	for _, d := range daemons {
		select {
		case <-d.done:
		case <-d.abandoned:
		}
	}
	s.queue.shutDown()
	s.wg.Wait()
	return nil
}

// Sync records a change of the object's essence and starts the timers and
// daemons of the selected registrations that are not running; those no
// longer selected are stopped. It keeps nothing of obj but its identity.
func (s *Spawner) Sync(key types.NamespacedName, obj client.Object, essence string, selected []*contract.Handler) {
	hash := maphash.String(s.seed, essence)
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[key]
	if o == nil || o.uid != obj.GetUID() {
		if o != nil {
			s.stopAllLocked(o, string(handlers.StopDeleted))
		}
		o = &spawned{uid: obj.GetUID(), essence: hash, changedAt: time.Now()}
		s.objects[key] = o
	} else if o.essence != hash {
		o.changedAt = time.Now()
		for _, t := range o.timers {
			if t.reg.Options.Idle > 0 {
				s.queue.add(t, o.changedAt.Add(t.reg.Options.Idle))
			}
		}
	}
	o.essence, o.wanted = hash, selected
	// Nothing starts before Start, nor once the manager stops: Start has
	// then stopped the daemons it knew, and one started later would run
	// on, unstopped (a reconcile still finishing when the manager stops).
	if s.ctx != nil && s.ctx.Err() == nil {
		s.spawnLocked(key, o, obj)
	}
}

// spawnLocked starts what o wants and stops what it no longer wants; obj
// is the object as it is now, for initial delays and daemons' causes.
func (s *Spawner) spawnLocked(key types.NamespacedName, o *spawned, obj client.Object) {
	wanted := map[string]bool{}
	for _, r := range o.wanted {
		id := r.Options.ID
		wanted[id] = true
		switch r.Kind {
		case spec.KindTimer:
			if o.timer(id) == nil && !o.finished[id] {
				t := &timerState{key: timerKey{key, id}, slot: queueSlot{index: -1}, reg: r}
				o.timers = append(o.timers, t)
				s.schedule(t, s.initialDelay(r, obj))
			}
		case spec.KindDaemon:
			// Never after a pause began (a reconcile that passed the gate
			// just before), or the pause would not stop it.
			if o.daemon(id) == nil && !o.finished[id] && s.k.Open() {
				s.startDaemonLocked(key, o, r, obj)
			}
		}
	}
	s.dropTimersLocked(o, func(t *timerState) bool { return !wanted[t.reg.Options.ID] })
	for _, d := range o.daemons {
		if !wanted[d.reg.Options.ID] {
			s.stopDaemonLocked(d, string(handlers.StopFiltersMismatch))
		}
	}
}

// timer returns the timer id of the object, nil if it has none.
func (o *spawned) timer(id string) *timerState {
	for _, t := range o.timers {
		if t.reg.Options.ID == id {
			return t
		}
	}
	return nil
}

// daemon returns the daemon id of the object, nil if it has none.
func (o *spawned) daemon(id string) *daemonState {
	for _, d := range o.daemons {
		if d.reg.Options.ID == id {
			return d
		}
	}
	return nil
}

// forgetDaemon takes daemon d out of o's, and reports whether it was there
// (not replaced by another of the same id meanwhile).
func (o *spawned) forgetDaemon(d *daemonState) bool {
	n := len(o.daemons)
	o.daemons = slices.DeleteFunc(o.daemons, func(other *daemonState) bool { return other == d })
	return len(o.daemons) < n
}

// dropTimersLocked stops the timers of o that drop says (all when nil),
// and takes them out of the queue.
func (s *Spawner) dropTimersLocked(o *spawned, drop func(*timerState) bool) {
	o.timers = slices.DeleteFunc(o.timers, func(t *timerState) bool {
		if drop == nil || drop(t) {
			s.queue.remove(t)
			return true
		}
		return false
	})
}

// finish records that the timer or daemon id is done for good with the
// object, in this process.
func (o *spawned) finish(id string) {
	if o.finished == nil {
		o.finished = map[string]bool{}
	}
	o.finished[id] = true
}

// NeedsFinalizer reports whether a timer or daemon holds the object: a
// selected one that has not finished for good.
func (s *Spawner) NeedsFinalizer(key types.NamespacedName, selected []*contract.Handler) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[key]
	for _, r := range selected {
		if o == nil || !o.finished[r.Options.ID] { // a nil map has no key
			return true
		}
	}
	return false
}

// Stop stops the timers and daemons of an object (being deleted, or
// handed over to another shard: the reason the daemons are told). It
// reports whether all daemons are gone (returned or abandoned) and no run
// of its timers is under way, so that the finalizer can go, or the
// object; as in Kopf, whose finalizer waits for a timer's task too. The
// object is reconciled again when the last of them returns.
func (s *Spawner) Stop(key types.NamespacedName, reason handlers.StopReason) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[key]
	if o == nil {
		return true
	}
	s.stopAllLocked(o, string(reason))
	return len(o.daemons) == 0 && o.running == 0
}

// Forget stops everything of an object that is gone and forgets it.
func (s *Spawner) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.objects[key]; o != nil {
		s.stopAllLocked(o, string(handlers.StopDeleted))
		s.forgetIdleLocked(key, o)
	}
}

// forgetIdleLocked forgets the object o of key once nothing of it is
// wanted or runs: no daemon, and no run of a timer under way (which holds
// it, see Stop).
func (s *Spawner) forgetIdleLocked(key types.NamespacedName, o *spawned) {
	if len(o.daemons) == 0 && o.running == 0 && len(o.wanted) == 0 && s.objects[key] == o {
		delete(s.objects, key)
	}
}

func (s *Spawner) stopAllLocked(o *spawned, reason string) {
	o.wanted = nil
	s.dropTimersLocked(o, nil)
	for _, d := range o.daemons {
		s.stopDaemonLocked(d, reason)
	}
}

// initialDelay is a timer's or daemon's delay before its first run.
func (s *Spawner) initialDelay(r *contract.Handler, obj client.Object) time.Duration {
	if f := r.Options.InitialDelayFunc; f != nil {
		if typed, err := s.k.ObjectFor(r, obj); err == nil {
			return f(typed)
		}
	}
	return r.Options.InitialDelay
}

// wakeUp makes the controller reconcile the object again, e.g. when a daemon
// has gone and the finalizer may be released.
func (s *Spawner) wakeUp(obj client.Object) { s.k.WakeUp(s.ctx, obj) }

// read returns a private copy of the object of key from the cache, or nil
// when the cache does not hold it, or holds another object of that name
// than the one of uid (deleted and created again): the reconcile that
// follows stops or replaces what the spawner runs for it. Only once Start
// has begun.
func (s *Spawner) read(key types.NamespacedName, uid types.UID) client.Object {
	obj := s.opts.NewObject()
	if err := s.opts.Reader.Get(s.ctx, key, obj); err != nil || obj.GetUID() != uid {
		return nil
	}
	return obj
}

// identity is a copy of obj's metadata that identifies it (kind, name,
// namespace, UID) and its labels and annotations, without its content:
// what a daemon's cause keeps of the object it started for.
func (s *Spawner) identity(obj client.Object) client.Object {
	id := s.opts.NewObject()
	id.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	id.SetNamespace(obj.GetNamespace())
	id.SetName(obj.GetName())
	id.SetUID(obj.GetUID())
	id.SetResourceVersion(obj.GetResourceVersion())
	id.SetLabels(maps.Clone(obj.GetLabels()))
	id.SetAnnotations(maps.Clone(obj.GetAnnotations()))
	return id
}

// newCall builds the call of a timer or daemon run. Its logger gets the
// object, handler and retry when it first writes a line: most runs write
// none.
func (s *Spawner) newCall(r *contract.Handler, obj client.Object, retry int, started time.Time) *handlers.Cause {
	log := logs.WithValuesLazily(s.log, "namespace", obj.GetNamespace(), "name", obj.GetName(), "handler", r.Options.ID, "retry", retry)
	c := s.k.Cause(r, obj, log)
	c.Retry, c.Started, c.Runtime = retry, started, time.Since(started)
	return c
}
