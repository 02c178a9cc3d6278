package robustness

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/envtest"
	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/reconcile"
	"github.com/gopf-dev/gopf/test/faults"
)

// Timing of a run. Generous, for the race detector on two busy cores.
const (
	// quiet is how long nothing must happen (no handler call, no write of
	// the operator) before a run counts as settled.
	quiet = 2 * time.Second
	// settleTimeout bounds a wait to settle; a run that does not settle is
	// judged as it is, and the checker says what is missing.
	settleTimeout = 60 * time.Second
	// blockTimeout bounds the wait for an armed handler to block.
	blockTimeout = 10 * time.Second
	// retryDelay is the delay of an armed handler's temporary errors.
	retryDelay = 200 * time.Millisecond
)

// Target is where a run happens: a control plane, a client for it, and a
// namespace of the run's own.
type Target struct {
	Ctx       context.Context
	Config    *rest.Config // the API server, as a cluster administrator
	Client    client.Client
	Scheme    *runtime.Scheme
	Namespace string
}

// Run carries out the sequence of seed on objects of class, with the
// operator keeping its state per storage, and returns what happened: the
// history for Check. Errors are of the run itself (the API server refused
// the test's own request, an operator did not start), not of the operator
// under test.
func Run(t Target, class Class, storage reconcile.Storage, seed uint64) (History, error) {
	return RunSequence(t, class, storage, Generate(seed), seed)
}

// RunSequence is Run with a sequence of the caller's, such as a scenario
// written out by hand; seed picks the requests the proxy's faults hit.
func RunSequence(t Target, class Class, storage reconcile.Storage, seq Sequence, seed uint64) (History, error) {
	px, err := faults.New(t.Config, seed)
	if err != nil {
		return History{}, err
	}
	defer px.Close() //nolint:errcheck // the run's outcome is what counts
	r := &runner{
		t: t, class: class, storage: storage, px: px,
		run:      fmt.Sprintf("%s-%d", t.Namespace, seed%100000),
		arms:     map[string]*arm{},
		entered:  make(chan struct{}, 1),
		uids:     map[string]string{},
		versions: map[string]Versions{},
		foreign:  map[string]bool{},
		deleted:  map[string]bool{},
		calls:    map[int]*openCall{},
		ended:    map[int]int{},
		children: map[int]*child{},
		ready:    map[int]chan struct{}{},
		gone:     map[int]bool{},
		killed:   make(chan struct{}, 1),
		separate: seq.Kills(),
	}
	if r.separate {
		if err := r.serveReports(); err != nil {
			return History{}, err
		}
		defer r.reports.Close() //nolint:errcheck // the run's outcome is what counts
	}
	defer r.late.Wait()
	defer r.stop()
	if err := r.start(); err != nil {
		return History{}, err
	}
	for i, op := range seq {
		if err := r.do(op); err != nil {
			return History{}, fmt.Errorf("operation %d (%s): %w", i, op, err)
		}
	}
	r.settle()
	h, err := r.history()
	if err != nil {
		return History{}, err
	}
	return h, r.cleanup()
}

// runner carries out one sequence and records its history.
type runner struct {
	t       Target
	class   Class
	storage reconcile.Storage
	px      *faults.Proxy
	run     string // the value of RunLabel

	op      operator
	process int

	// separate: the operators run as processes of their own, which a
	// SIGKILL can end (the sequence kills), and report their handler calls
	// to reports.
	separate bool
	reports  *reportServer
	late     sync.WaitGroup // kills after a delay (MomentAfterHandler)

	mu       sync.Mutex
	events   []Event
	arms     map[string]*arm // by object name and handler
	entered  chan struct{}   // a blocking handler is running
	patches  int
	fresh    int
	uids     map[string]string
	versions map[string]Versions
	foreign  map[string]bool // the other writer's finalizer is on the object
	deleted  map[string]bool
	names    []string // objects created, in order
	callID   int
	daemonID int                   // the last daemon run's id
	timerID  int                   // the last timer run's id
	ticks    int                   // daemon iterations reported
	calls    map[int]*openCall     // handler calls begun and not ended, by id
	ended    map[int]int           // handler calls ended: their index in events, by id
	children map[int]*child        // the processes of their own, by number
	ready    map[int]chan struct{} // closed when the process is ready
	gone     map[int]bool          // processes killed
	killed   chan struct{}         // a process was killed
}

// arm is how an armed handler behaves on its next calls.
type arm struct {
	behaviour Behaviour
	times     int
	moment    Moment        // BehaveKill
	delay     time.Duration // BehaveKill at MomentAfterHandler
}

func (r *runner) record(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordLocked(e)
}

func (r *runner) recordLocked(e Event) {
	e.At = time.Now()
	r.events = append(r.events, e)
}

// name is the name of object number n.
func (r *runner) name(n int) string {
	if r.class.Cluster {
		return fmt.Sprintf("%s-obj%d", r.t.Namespace, n)
	}
	return fmt.Sprintf("obj%d", n)
}

// key is the object's key for the client.
func (r *runner) key(name string) client.ObjectKey {
	if r.class.Cluster {
		return client.ObjectKey{Name: name}
	}
	return client.ObjectKey{Namespace: r.t.Namespace, Name: name}
}

// start starts a new operator process through the proxy: in this process,
// or one of its own if the run kills.
func (r *runner) start() error {
	r.mu.Lock()
	r.process++
	p := r.process
	ready := make(chan struct{})
	r.ready[p] = ready
	r.mu.Unlock()
	var op operator
	var err error
	if r.separate {
		op, err = r.startChild(p, ready)
	} else {
		op, err = r.startHere(p)
	}
	if err != nil {
		return fmt.Errorf("starting operator process %d: %w", p, err)
	}
	r.op = op
	r.record(Event{Kind: EventStart, Process: p})
	return nil
}

// startHere starts operator process p in this process.
func (r *runner) startHere(p int) (operator, error) {
	reg := handlers.NewRegistry()
	r.class.register(reg, func(ctx context.Context, handler string, obj map[string]any, c *handlers.Cause) (any, error) {
		return r.handle(ctx, p, handler, obj, c)
	}, options{labels: handlers.Labels{RunLabel: r.run}, watched: r.class.watchedPath,
		daemon: func(c *handlers.Cause, life daemonLife) error {
			return runDaemon(c, life, p, func(d daemonReport) (daemonReply, error) {
				rep, _ := r.daemon(d) // this process is never killed
				return rep, nil
			})
		},
		timer: func(c *handlers.Cause) error {
			return runTimer(c, p, func(d timerReport) (timerReply, error) {
				rep, _ := r.timer(d) // this process is never killed
				return rep, nil
			})
		}})
	cfg := r.px.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit, as gopf.Main has it
	opts := envtest.OperatorOptions{Scheme: r.t.Scheme, Reconcile: reconcile.Options{Storage: r.storage}}
	if !r.class.Cluster {
		opts.Namespaces = []string{r.t.Namespace}
	}
	op, err := envtest.RunOperator(r.t.Ctx, cfg, reg, opts)
	if err != nil {
		return nil, err
	}
	return op, nil
}

// stop stops the operator, if one runs, and waits until it has.
func (r *runner) stop() {
	if r.op == nil {
		return
	}
	r.record(Event{Kind: EventStopping, Process: r.process})
	_ = r.op.Stop() // errors while stopping are the operator's business
	r.op = nil
	r.record(Event{Kind: EventStop, Process: r.process})
}

// handle is every handler of the suite in this process: it records the
// call, behaves as armed, and returns the values it saw as its result.
func (r *runner) handle(ctx context.Context, process int, handler string, obj map[string]any, c *handlers.Cause) (any, error) {
	v := r.class.versions(obj)
	rep, _ := r.begin(newCall(process, handler, v, c)) // this process is never killed
	outcome, patched, err := behave(ctx, rep, c)
	r.end(rep.ID, outcome, patched)
	if interrupted(ctx, outcome, err) {
		r.end(rep.ID, Interrupted, false)
		err = ctx.Err()
	}
	return map[string]any{"saw": v.String()}, err
}

// takeArm returns how the handler behaves on this call, and uses up the
// arm. A blocking arm stops any change handler of the object (one armed
// on the resume handler, that handler: see BehaveBlock).
func (r *runner) takeArm(name, handler string) arm {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.arms[name+"/"+handler]
	if a == nil && handler != HandlerResume {
		if b := r.arms[name+"/block"]; b != nil {
			delete(r.arms, name+"/block")
			return arm{behaviour: BehaveBlock}
		}
	}
	if a == nil {
		return arm{}
	}
	a.times--
	if a.times <= 0 {
		delete(r.arms, name+"/"+handler)
	}
	return *a
}

// do carries out one operation.
func (r *runner) do(op Op) error {
	name := r.name(op.Object)
	switch op.Kind {
	case OpCreate:
		return r.create(name)
	case OpSpec, OpLabel, OpWatched:
		return r.change(name, op.Kind)
	case OpDelete:
		if err := r.delete(name); err != nil {
			return err
		}
		r.mu.Lock()
		r.deleted[name] = true
		r.recordLocked(Event{Kind: EventDelete, Object: name, UID: r.uids[name]})
		r.mu.Unlock()
	case OpConflict:
		return r.conflict(name)
	case OpArm:
		r.mu.Lock()
		if op.Behaviour == BehaveBlock && op.Handler != HandlerResume {
			r.arms[name+"/block"] = &arm{behaviour: BehaveBlock, times: 1}
		} else {
			r.arms[name+"/"+op.Handler] = &arm{behaviour: op.Behaviour, times: max(op.Times, 1), moment: op.Moment, delay: op.Delay}
		}
		r.mu.Unlock()
	case OpStop:
		r.stop()
	case OpStart:
		return r.start()
	case OpAwaitBlock:
		select {
		case <-r.entered:
			return nil
		case <-time.After(blockTimeout):
			return fmt.Errorf("no handler armed to block was called within %s", blockTimeout)
		}
	case OpRestartInHandler:
		select {
		case <-r.entered:
		case <-time.After(blockTimeout):
			// The change went to another handler's retry (a create still
			// failing takes the update with it): restart all the same.
			r.mu.Lock()
			for k := range r.arms {
				if strings.HasSuffix(k, "/block") {
					delete(r.arms, k)
				}
			}
			r.mu.Unlock()
		}
		r.stop()
		return r.start()
	case OpRestartAfterLost:
		r.awaitLost()
		r.stop()
		return r.start()
	case OpKill:
		r.awaitKill(op)
		r.op = nil
		return r.start()
	case OpFaults:
		r.px.SetFaults(r.faults(op.Fault))
	case OpHeal:
		r.px.SetFaults(faults.Faults{})
	case OpSettle:
		r.settle()
	}
	return nil
}

// delete deletes the object as read just before, with its resourceVersion
// as a precondition, and again on a conflict. The API server decides
// whether a DELETE waits for finalizers on one read of the object and
// removes it on another, so a finalizer added in between is lost and the
// object vanishes (kubernetes/kubernetes#77988, open in v1.37); no
// operator can prevent that, and the precondition keeps the race out of
// the suite, which checks gopf.
func (r *runner) delete(name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.class.GVK)
	for {
		if err := r.t.Client.Get(r.t.Ctx, r.key(name), u); err != nil {
			return err
		}
		rv := u.GetResourceVersion()
		err := r.t.Client.Delete(r.t.Ctx, u, client.Preconditions{ResourceVersion: &rv})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// faults are the proxy's faults for f: they hit the operator's writes of
// the class's objects.
func (r *runner) faults(f Fault) faults.Faults {
	match := func(req *http.Request) bool {
		pr := faults.Request{Method: req.Method, Path: req.URL.Path}
		res, _ := pr.Resource()
		return pr.Write() && strings.HasPrefix(res, r.class.Resource)
	}
	switch f {
	case Fault409:
		return faults.Faults{Fraction: 0.4, Statuses: []int{http.StatusConflict}, Match: match}
	case FaultTimeout:
		return faults.Faults{Fraction: 0.4, Statuses: []int{http.StatusGatewayTimeout}, Match: match}
	case FaultSlow:
		return faults.Faults{Delay: time.Second, Match: match}
	case FaultLostReset:
		return faults.Faults{LoseFraction: 0.4, Loss: faults.LossReset, Match: match}
	case FaultLost502:
		return faults.Faults{LoseFraction: 0.4, Loss: faults.Loss502, Match: match}
	}
	return faults.Faults{Fraction: 0.4, Statuses: []int{http.StatusInternalServerError}, Match: match}
}

// awaitLost waits until the proxy loses the response of one more of the
// operator's writes, or for blockTimeout when the operator writes nothing.
func (r *runner) awaitLost() {
	lost := func() int {
		n := 0
		for _, req := range r.px.Requests() {
			if req.Lost {
				n++
			}
		}
		return n
	}
	before := lost()
	deadline := time.Now().Add(blockTimeout)
	for lost() == before && time.Now().Before(deadline) {
		select {
		case <-r.t.Ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// next returns a fresh value with a prefix.
func (r *runner) next(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fresh++
	return fmt.Sprintf("%s%d", prefix, r.fresh)
}

func (r *runner) create(name string) error {
	v := Versions{Spec: r.next("s"), Label: r.next("l"), Watched: r.next("w")}
	u := r.class.newObject(r.t.Namespace, name, r.run, v)
	if err := r.t.Client.Create(r.t.Ctx, u); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, name)
	r.uids[name] = string(u.GetUID())
	r.versions[name] = v
	r.recordLocked(Event{Kind: EventWrite, Object: name, UID: string(u.GetUID()), Versions: v})
	return nil
}

// change gives the object a fresh value of one kind, read-modify-write,
// again on conflicts with the operator's writes.
func (r *runner) change(name string, kind OpKind) error {
	r.mu.Lock()
	v := r.versions[name]
	r.mu.Unlock()
	switch kind {
	case OpSpec:
		v.Spec = r.next("s")
	case OpLabel:
		v.Label = r.next("l")
	case OpWatched:
		v.Watched = r.next("w")
	}
	return r.update(name, func(u *unstructured.Unstructured) bool {
		r.class.setVersions(u.Object, v)
		return true
	}, func() {
		r.versions[name] = v
		r.recordLocked(Event{Kind: EventWrite, Object: name, UID: r.uids[name], Versions: v})
	})
}

// conflict is the other writer: it adds or removes its finalizer.
func (r *runner) conflict(name string) error {
	var on bool
	return r.update(name, func(u *unstructured.Unstructured) bool {
		fs := u.GetFinalizers()
		on = !slices.Contains(fs, ForeignFinalizer)
		if on {
			fs = append(fs, ForeignFinalizer)
		} else {
			fs = slices.DeleteFunc(fs, func(f string) bool { return f == ForeignFinalizer })
		}
		u.SetFinalizers(fs)
		return true
	}, func() {
		r.foreign[name] = on
		r.recordLocked(Event{Kind: EventConflict, Object: name, UID: r.uids[name]})
	})
}

// update reads the object, changes it with change and writes it back,
// again while the write conflicts; done runs, under the lock, once the
// write landed.
func (r *runner) update(name string, change func(*unstructured.Unstructured) bool, done func()) error {
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.class.GVK)
		if err := r.t.Client.Get(r.t.Ctx, r.key(name), u); err != nil {
			return err
		}
		if !change(u) {
			return nil
		}
		err := r.t.Client.Update(r.t.Ctx, u)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		r.mu.Lock()
		done()
		r.mu.Unlock()
		return nil
	}
}

// settle waits until the operator has had nothing to do for a while and
// the deleted objects are gone (or rid of gopf's finalizers), or until
// settleTimeout. The other writer's finalizers on deleted objects are
// removed first: the other writer finishes its part.
func (r *runner) settle() {
	if r.op == nil {
		return
	}
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) {
		if time.Since(r.lastActivity()) >= quiet && r.handled() && r.deletionsDone() {
			return
		}
		select {
		case <-r.t.Ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// handled reports whether every object alive has had what the contract
// promises for its last change: a create or update handler finished on its
// values, and the field handler on its watched field.
func (r *runner) handled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.names {
		if r.deleted[name] {
			continue
		}
		v := r.versions[name]
		change, field := false, false
		for _, e := range r.events {
			if e.Kind != EventCall || e.Object != name || !e.Outcome.finished() {
				continue
			}
			change = change || (e.Handler == HandlerCreate || e.Handler == HandlerUpdate) && e.Versions == v
			field = field || e.Handler == HandlerField && e.Versions.Watched == v.Watched
		}
		if !change || !field {
			return false
		}
	}
	return true
}

// lastActivity is when the last handler call returned or the operator
// last wrote.
func (r *runner) lastActivity() time.Time {
	var last time.Time
	r.mu.Lock()
	for _, e := range r.events {
		if e.Kind == EventCall || e.Kind == EventStart {
			last = e.At
		}
	}
	r.mu.Unlock()
	for _, req := range r.px.Requests() {
		if req.Write() && req.At.After(last) {
			last = req.At
		}
	}
	return last
}

// deletionsDone reports whether every deleted object is gone (or, for
// kinds whose objects stay terminating, has no finalizer but the other
// writer's); it removes the other writer's finalizer from deleted objects.
func (r *runner) deletionsDone() bool {
	r.mu.Lock()
	names := make([]string, 0, len(r.deleted))
	for name := range r.deleted {
		names = append(names, name)
	}
	r.mu.Unlock()
	for _, name := range names {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.class.GVK)
		err := r.t.Client.Get(r.t.Ctx, r.key(name), u)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false
		}
		if slices.Contains(u.GetFinalizers(), ForeignFinalizer) {
			_ = r.conflict(name) // the other writer lets go; retried next time if it failed
			return false
		}
		if !r.class.Terminating || len(u.GetFinalizers()) > 0 {
			return false
		}
	}
	return true
}

// history gathers the run's history: its events, the refused writes the
// proxy saw, and the objects as they are now.
func (r *runner) history() (History, error) {
	r.mu.Lock()
	events := slices.Clone(r.events)
	names := slices.Clone(r.names)
	ticks := r.ticks
	r.mu.Unlock()
	writes := map[string]int{}
	for _, req := range r.px.Requests() {
		res, name := req.Resource()
		if !req.Write() || !strings.HasPrefix(res, r.class.Resource) || name == "" {
			continue
		}
		writes[name]++
		noState := !r.class.carriesState(r.storage, strings.HasSuffix(res, "/status"))
		if req.Lost && req.Status < 400 {
			// Landed: a lost response excuses no repeat.
			kind := EventLost
			if noState {
				kind = EventLostResults
			}
			events = append(events, Event{At: req.At, Kind: kind, Object: name, Detail: fmt.Sprintf("%s %s: %d, response lost", req.Method, res, req.Status)})
			continue
		}
		if req.Lost || req.Injected || req.Status == 0 || req.Status >= 400 {
			events = append(events, Event{At: req.At, Kind: EventRefused, Object: name, Detail: fmt.Sprintf("%s %s: %d", req.Method, res, req.Status)})
			continue
		}
		kind := EventLanded
		if noState {
			kind = EventLandedNoState
		}
		events = append(events, Event{At: req.At, Kind: kind, Object: name, Detail: fmt.Sprintf("%s %s: %d", req.Method, res, req.Status)})
	}
	slices.SortStableFunc(events, func(a, b Event) int { return a.At.Compare(b.At) })
	h := History{
		Events:        events,
		Final:         map[string]Final{},
		Finalizers:    []string{"gopf.dev/finalizer" /* Options.Prefix's default */, reconcile.DefaultKopfFinalizer},
		Terminating:   r.class.Terminating,
		WritesPerCall: r.class.writesPerCall(r.storage),
		DaemonTicks:   ticks,
		TimerInterval: TimerInterval,
		End:           time.Now(),
	}
	for _, name := range names {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.class.GVK)
		err := r.t.Client.Get(r.t.Ctx, r.key(name), u)
		f := Final{Writes: writes[name]}
		r.mu.Lock()
		f.ForeignFinalizer = r.foreign[name]
		r.mu.Unlock()
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return History{}, err
		default:
			f.Exists, f.UID, f.Finalizers = true, string(u.GetUID()), u.GetFinalizers()
			f.Versions = r.class.versions(u.Object)
		}
		h.Final[name] = f
	}
	return h, nil
}

// cleanup stops the operator and removes what the run leaves of
// cluster-scoped objects (namespaced ones go with the run's namespace).
func (r *runner) cleanup() error {
	r.stop()
	if !r.class.Cluster {
		return nil
	}
	for _, name := range r.names {
		err := r.update(name, func(u *unstructured.Unstructured) bool {
			u.SetFinalizers(nil)
			return true
		}, func() {})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.class.GVK)
		u.SetName(name)
		if err := r.t.Client.Delete(r.t.Ctx, u); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
