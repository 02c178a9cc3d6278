package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/decide"
	"github.com/gopf-dev/gopf/internal/engine"
	"github.com/gopf-dev/gopf/internal/operator"
	"github.com/gopf-dev/gopf/internal/peering"
	"github.com/gopf-dev/gopf/internal/scope"
	"github.com/gopf-dev/gopf/internal/state"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// Planner reads what gopf stored on objects — progress records, the
// last-handled essence, finalizers — and tells, per object, where each
// handler stands and what an operator would do with the object on start.
// It only reads: paged List requests of the objects and of gopf's
// HandlerFailed Events, and a Get of the peering object; so it needs the
// permissions to list the kinds and Events, and to get the peering object
// (without the last two, it says less). It reads stored state through the
// storage the controller of each kind uses, so that it sees what the
// engine would see, and works out causes with the engine's own functions.
//
// A planner made with NewPlanner knows the operator's handlers, their
// filters and options, and works out causes as the engine does. One made
// with NewGenericPlanner knows only kinds: it reports the progress records
// and finalizers it finds, for operators whose code it does not have.
type Planner struct {
	reader client.Reader
	kinds  []*plannedKind
	opts   engine.Options
	// generic: the handlers are not known, only what is stored.
	generic bool
	// scope limits the objects to the operator's namespaces.
	scope *scope.Scope
}

// plannedKind is one kind the planner lists.
type plannedKind struct {
	k        *engine.KindController
	desc     engine.Description
	resource schema.GroupVersionResource
	// stores are where state is looked for, in order: the places the
	// controller's storage reads (storage.places), with, for a generic
	// planner, gopf's other place after its own. The planner says which
	// one held an object's state (ObjectStatus.StateSource).
	stores []state.Storage
}

// Selection says which objects a plan covers.
type Selection struct {
	// Kind is a kind of the operator by kind name, resource name (plural or
	// singular) or either with its group ("kopfexamples.kopf.dev"), in any
	// case; empty for every kind.
	Kind string
	// Name selects the objects of that name (one per kind and namespace).
	Name string
	// Namespace limits the plan to one namespace; empty for all.
	Namespace string
	// PageSize is how many objects one List request returns. Default 500.
	PageSize int64
}

// NewPlanner returns the planner of an operator made of reg's handlers,
// for the cluster of cfg. scheme knows the handlers' Go types; opts are
// the engine's options the operator runs with (prefix, status field,
// storage, namespaces, peering), so that state is looked for where that
// operator keeps it.
func NewPlanner(cfg *rest.Config, scheme *runtime.Scheme, reg *handlers.Registry, opts engine.Options) (*Planner, error) {
	if err := reg.Err(); err != nil {
		return nil, err
	}
	p, disco, mapper, err := newPlanner(cfg, scheme, opts)
	if err != nil {
		return nil, err
	}
	// Kinds the API server does not serve yet have no objects to plan for.
	kinds, _, err := operator.KindsOf(reg, scheme, mapper, func(gvk schema.GroupVersionKind, proto *contract.Handler) (*engine.KindController, error) {
		return p.describe(mapper, disco, gvk, proto)
	})
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if err := p.addKind(mapper, k); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// NewGenericPlanner returns a planner for objects of the named kinds whose
// handlers it does not know, for the cluster of cfg. A kind is named as
// kubectl names it: a resource ("kopfexamples"), a kind ("KopfExample"),
// either with its group ("kopfexamples.kopf.dev") or a version too
// ("kopfexamples.v1.kopf.dev"), or by a short name ("cm"). The planner reports the stored progress
// records, last-handled state and finalizers, looking for the state both
// in status.<opts.StatusField> and in annotations under opts.Prefix; it
// cannot tell what would run on start.
func NewGenericPlanner(cfg *rest.Config, kinds []string, opts engine.Options) (*Planner, error) {
	if len(kinds) == 0 {
		return nil, errors.New("gopf: a generic planner needs at least one kind")
	}
	p, disco, mapper, err := newPlanner(cfg, runtime.NewScheme(), opts)
	if err != nil {
		return nil, err
	}
	p.generic = true
	for _, name := range kinds {
		gvk, err := kindNamed(restmapper.NewShortcutExpander(mapper, disco, func(string) {}), name)
		if err != nil {
			return nil, err
		}
		k, err := p.describe(mapper, disco, gvk, &contract.Handler{Unstructured: true})
		if err != nil {
			return nil, fmt.Errorf("gopf: %w", err)
		}
		if err := p.addKind(mapper, k); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// describe is the controller of kind gvk as the engine would describe it
// (reading objects into the Go type of proto), from what the API server
// says of the kind.
func (p *Planner) describe(mapper meta.RESTMapper, disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind,
	proto *contract.Handler) (*engine.KindController, error) {
	facts, err := engine.DiscoverKind(mapper, disco, gvk)
	if err != nil {
		return nil, err
	}
	return engine.DescribeKind(gvk, engine.ObjectMaker(gvk, proto), p.opts, facts)
}

// kindNamed resolves a kind named as kubectl names it; mapper knows the
// short names ("cm").
func kindNamed(mapper meta.RESTMapper, name string) (schema.GroupVersionKind, error) {
	lower := strings.ToLower(name)
	var candidates []schema.GroupVersionResource
	if gvr, gr := schema.ParseResourceArg(lower); gvr != nil {
		candidates = append(candidates, *gvr)
		candidates = append(candidates, gr.WithVersion(""))
	} else {
		candidates = append(candidates, gr.WithVersion(""))
	}
	var errs []error
	for _, gvr := range candidates {
		gvk, err := mapper.KindFor(gvr)
		if err == nil {
			return gvk, nil
		}
		errs = append(errs, err)
	}
	// A kind name rather than a resource: KopfExample, KopfExample.kopf.dev.
	gk := schema.ParseGroupKind(name)
	if m, err := mapper.RESTMapping(gk); err == nil {
		return m.GroupVersionKind, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("gopf: the API server serves no kind called %q: %w", name, errors.Join(errs...))
}

func newPlanner(cfg *rest.Config, scheme *runtime.Scheme, opts engine.Options) (*Planner, discovery.DiscoveryInterface, meta.RESTMapper, error) {
	opts = opts.WithDefaults()
	if opts.Peering != nil {
		if err := opts.Peering.Validate(); err != nil {
			return nil, nil, nil, err
		}
	}
	sc, err := scope.New(opts.Namespaces)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gopf: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gopf: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gopf: finding the kinds the API server serves: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gopf: creating a discovery client: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gopf: creating a client: %w", err)
	}
	return &Planner{reader: c, opts: opts, scope: sc}, disco, mapper, nil
}

func (p *Planner) addKind(mapper meta.RESTMapper, k *engine.KindController) error {
	desc := k.Describe()
	mapping, err := mapper.RESTMapping(desc.GVK.GroupKind(), desc.GVK.Version)
	if err != nil {
		return fmt.Errorf("gopf: kind %s is not served by the API server: %w", desc.GVK, err)
	}
	pk := &plannedKind{k: k, desc: desc, resource: mapping.Resource, stores: desc.Places}
	if p.generic {
		// gopf's other place goes right after its own, before Kopf's.
		var other state.Storage = state.StatusStorage{Field: p.opts.StatusField}
		if pk.stores[0].InStatus() {
			other = state.AnnotationStorage{Prefix: p.opts.Prefix}
		}
		pk.stores = slices.Insert(pk.stores, 1, other)
	}
	p.kinds = append(p.kinds, pk)
	return nil
}

// Kinds returns the kinds the planner covers, in the order it lists them.
func (p *Planner) Kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, len(p.kinds))
	for i, pk := range p.kinds {
		out[i] = pk.desc.GVK
	}
	return out
}

// matches reports whether name is one of the names of the kind.
func (pk *plannedKind) matches(name string) bool {
	name = strings.ToLower(name)
	kind, res := strings.ToLower(pk.desc.GVK.Kind), pk.resource.Resource
	for _, n := range []string{kind, res, strings.TrimSuffix(res, "s")} {
		if name == n || pk.desc.GVK.Group != "" && name == n+"."+pk.desc.GVK.Group {
			return true
		}
	}
	return false
}

// Plan lists the objects sel selects, kind after kind and page after page,
// and calls emit with each object's status as soon as its page arrives, so
// that thousands of objects stream out rather than wait. An error of emit
// stops the plan and is returned.
func (p *Planner) Plan(ctx context.Context, sel Selection, emit func(*ObjectStatus) error) error {
	kinds := p.kinds
	if sel.Kind != "" {
		kinds = nil
		for _, pk := range p.kinds {
			if pk.matches(sel.Kind) {
				kinds = append(kinds, pk)
			}
		}
		if len(kinds) == 0 {
			return fmt.Errorf("gopf: the operator has no kind called %q (its kinds: %s)", sel.Kind, p.kindNames())
		}
	}
	if sel.PageSize <= 0 {
		sel.PageSize = 500
	}
	env := &planEnv{operator: p.workingOperator(ctx), failures: p.failures(ctx, sel)}
	for _, pk := range kinds {
		if err := p.planKind(ctx, pk, sel, env, emit); err != nil {
			return err
		}
	}
	return nil
}

// planEnv is what a plan reads once for all objects.
type planEnv struct {
	// operator is the identity of the operator that works (see
	// workingOperator).
	operator string
	// failures are the permanent failures gopf reported, by object UID.
	failures map[types.UID][]Failure
}

// failures reads the HandlerFailed Warning Events gopf posts when a
// handler fails for good (see failedForGood), by the UID of their object:
// once every handler of a cause is finished, the progress records go, and
// the Events (for as long as the API server keeps them, an hour by
// default) are what remains of a failure. Events that cannot be listed
// (no permission) give none.
func (p *Planner) failures(ctx context.Context, sel Selection) map[types.UID][]Failure {
	out := map[types.UID][]Failure{}
	opts := []client.ListOption{client.Limit(sel.PageSize), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("reason", "HandlerFailed")}}
	if sel.Namespace != "" {
		opts = append(opts, client.InNamespace(sel.Namespace))
	}
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "EventList"})
		if err := p.reader.List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
			return out
		}
		for _, ev := range list.Items {
			if uid, f, ok := failureOf(ev.Object); ok {
				out[uid] = append(out[uid], f)
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	for uid := range out {
		sort.Slice(out[uid], func(i, j int) bool { return out[uid][i].Time.Before(out[uid][j].Time) })
	}
	return out
}

// failureOf reads a HandlerFailed Event (in core/v1 form): the object's
// UID, and the handler, message and time of the failure.
func failureOf(ev map[string]any) (types.UID, Failure, bool) {
	uid, _, _ := unstructured.NestedString(ev, "involvedObject", "uid")
	msg, _, _ := unstructured.NestedString(ev, "message")
	quoted, err := strconv.QuotedPrefix(strings.TrimPrefix(msg, "handler "))
	if uid == "" || err != nil || !strings.HasPrefix(msg, "handler ") {
		return "", Failure{}, false
	}
	id, _ := strconv.Unquote(quoted)
	f := Failure{Handler: id, Message: strings.TrimPrefix(strings.TrimPrefix(msg, "handler "+quoted), " failed permanently: ")}
	for _, path := range [][]string{{"series", "lastObservedTime"}, {"lastTimestamp"}, {"eventTime"}} {
		text, _, _ := unstructured.NestedString(ev, path...)
		if t, err := time.Parse(time.RFC3339Nano, text); err == nil && t.After(f.Time) {
			f.Time = t
		}
	}
	return types.UID(uid), f, true
}

func (p *Planner) kindNames() string {
	names := make([]string, 0, len(p.kinds))
	for _, pk := range p.kinds {
		names = append(names, pk.resource.GroupResource().String())
	}
	return strings.Join(names, ", ")
}

// planKind lists the objects of one kind with Limit and Continue.
func (p *Planner) planKind(ctx context.Context, pk *plannedKind, sel Selection, env *planEnv, emit func(*ObjectStatus) error) error {
	listOpts := []client.ListOption{client.Limit(sel.PageSize)}
	if sel.Namespace != "" {
		listOpts = append(listOpts, client.InNamespace(sel.Namespace))
	}
	if sel.Name != "" {
		listOpts = append(listOpts, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", sel.Name)})
	}
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(pk.desc.GVK.GroupVersion().WithKind(pk.desc.GVK.Kind + "List"))
		if err := p.reader.List(ctx, list, append(listOpts, client.Continue(cont))...); err != nil {
			return fmt.Errorf("gopf: listing %s: %w", pk.resource.GroupResource(), err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if !p.scope.Includes(item.GetNamespace()) {
				continue
			}
			st, err := p.objectStatus(pk, item, time.Now(), env.operator, env.failures[item.GetUID()])
			if err != nil {
				return err
			}
			if err := emit(st); err != nil {
				return err
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}

// workingOperator is the identity of the operator that handles objects
// according to the peering object: the only live entry with the highest
// priority. It is "" without peering, when the peering object cannot be
// read, and when no single operator works (no live entry, or a tie).
func (p *Planner) workingOperator(ctx context.Context) string {
	if p.opts.Peering == nil {
		return ""
	}
	opts := p.opts.Peering.WithDefaults()
	obj := (&peering.Peering{Opts: opts, GVK: peering.Kind(opts)}).Object()
	if err := p.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return ""
	}
	status, _ := obj.Object["status"].(map[string]any)
	now, best, tie, top := time.Now(), "", false, 0
	for id, raw := range status {
		var entry peering.Peer
		if data, err := json.Marshal(raw); err != nil || json.Unmarshal(data, &entry) != nil || !entry.Alive(now) {
			continue
		}
		switch {
		case best == "" || entry.Priority > top:
			best, top, tie = id, entry.Priority, false
		case entry.Priority == top:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// ring is the sharding ring of the operator, "" when the planner does not
// know it.
func (p *Planner) ring() string {
	if p.opts.Sharding == nil {
		return ""
	}
	return p.opts.Sharding.Ring
}

// objectStatus works out the status of one listed object.
func (p *Planner) objectStatus(pk *plannedKind, item *unstructured.Unstructured, now time.Time, working string, failures []Failure) (*ObjectStatus, error) {
	in, err := pk.k.Inspect(item, pk.stores)
	if err != nil {
		return nil, err
	}
	obj, gvk := in.Object, pk.desc.GVK
	out := &ObjectStatus{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		Failures:   failures,
	}
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		out.Deleting = &ts.Time
	}
	if out.Shard = shardStatus(obj, p.ring()); out.Shard != nil && out.Shard.Name != "" {
		working = out.Shard.Name // the shard runs the object's timers and daemons
	}
	if in.Source != nil {
		out.StateSource = in.Source.Where()
	}
	if in.StateErr != nil {
		out.StateError = in.StateErr.Error()
	}
	pl := &objectPlan{in: in, kind: &pk.desc, now: now, out: out, operator: working, byID: map[string]*HandlerStatus{}}
	if in.State != nil {
		pl.progress = in.State.Progress
		out.Handled = in.State.Essence != ""
		out.StateWritten = stateWritten(obj, in.Source)
	}
	if p.generic {
		pl.records()
	} else {
		out.Changed = out.Handled && in.State.Essence != in.Essence
		pl.handlers()
	}
	pl.finalizers(p.generic)
	out.State = pl.summary()
	if !p.generic && p.ring() != "" && out.Shard != nil && out.Shard.Draining {
		// The shard hands the object over before it would decide anything.
		out.OnStart = []Action{{Do: ActionHandOver, Text: "hand over to another shard: stop its timers and daemons, remove the shard and drain labels"}}
	}
	return out, nil
}

// objectPlan is the working set of one object's status.
type objectPlan struct {
	in       *engine.Inspection
	kind     *engine.Description
	now      time.Time
	progress map[string]*state.Progress // the stored progress records
	out      *ObjectStatus
	operator string
	byID     map[string]*HandlerStatus
	// wantsFinalizer: gopf's finalizer is needed by a selected handler.
	wantsFinalizer bool
	// selected: some handler selects the object.
	selected bool
	// releases: the delete path is done and gopf's finalizer would go.
	releases bool
}

// add appends a handler's status, once per id.
func (pl *objectPlan) add(h HandlerStatus) *HandlerStatus {
	if got := pl.byID[h.ID]; got != nil {
		return got
	}
	pl.out.Handlers = append(pl.out.Handlers, h)
	added := &pl.out.Handlers[len(pl.out.Handlers)-1]
	pl.byID[h.ID] = added
	return added
}

// do appends an action of the start.
func (pl *objectPlan) do(a Action) { pl.out.OnStart = append(pl.out.OnStart, a) }

// records reports every stored progress record as it is, and the
// failures that came with the last-handled state: the generic view.
func (pl *objectPlan) records() {
	for _, id := range sortedIDs(pl.progress) {
		pl.add(recordStatus(id, pl.progress[id], pl.now))
	}
	if !pl.out.Handled {
		return
	}
	for _, f := range pl.out.Failures {
		if pl.byID[f.Handler] == nil {
			if last := pl.lastFailure(f.Handler); last != nil {
				pl.add(HandlerStatus{ID: f.Handler, State: HandlerFailed, Since: &last.Time, Message: last.Message})
			}
		}
	}
}

// handlers renders what Reconcile would do on the first reconcile of a
// process, from the same decision (decide), without calling anything:
// which handlers select the object, what the cause is, and where each
// handler stands.
func (pl *objectPlan) handlers() {
	d := pl.in.Decision
	pl.selected = len(d.Change)+len(d.Level)+len(d.Spawn) > 0
	pl.wantsFinalizer = slices.ContainsFunc(d.Change, contract.HoldsObjects) || len(d.Spawn) > 0
	switch d.Route {
	case decide.RouteIgnore:
		pl.do(Action{Do: ActionNothing, Text: "nothing: no handler selects the object"})
	case decide.RouteDelete:
		pl.deletion(d)
	case decide.RouteOthers:
		pl.idle(d.Change)
		pl.do(Action{Do: ActionNothing, Text: "nothing: the object is being deleted and gopf's finalizer is not on it"})
	case decide.RouteLive:
		switch d.Finalizer {
		case decide.FinalizerAdd:
			pl.do(Action{Do: ActionAddFinalizer, Text: "add finalizer " + pl.kind.Finalizers.Own})
		case decide.FinalizerRemove:
			pl.do(Action{Do: ActionRemoveFinalizer, Text: "remove finalizer " + pl.kind.Finalizers.Own})
		}
		pl.change(d)
		pl.spawnAndLevel(d)
	}
	// Records of handlers the operator does not have (renamed, removed).
	for _, id := range sortedIDs(pl.progress) {
		if pl.byID[id] == nil {
			h := recordStatus(id, pl.progress[id], pl.now)
			h.Message = strings.TrimSpace("not a handler of this operator; " + h.Message)
			pl.add(h)
		}
	}
	if len(pl.out.OnStart) == 0 {
		pl.do(Action{Do: ActionNothing, Text: "nothing: every handler is done"})
	}
}

// spawnAndLevel plans the timers, daemons and level handlers of a live
// object.
func (pl *objectPlan) spawnAndLevel(d decide.Decision) {
	for _, r := range d.Spawn {
		h := pl.add(HandlerStatus{ID: r.Options.ID, Kind: r.Kind.String(), State: HandlerRunning, Operator: pl.operator})
		verb := "start daemon "
		if r.Kind == spec.KindTimer {
			verb = "schedule timer "
		}
		pl.do(Action{Do: ActionStart, Handler: h.ID, Text: verb + h.ID})
	}
	for _, r := range d.Level {
		pl.add(HandlerStatus{ID: r.Options.ID, Kind: r.Kind.String(), State: HandlerPending})
		pl.do(Action{Do: ActionCall, Handler: r.Options.ID, Text: "reconcile " + r.Options.ID})
	}
}

// change plans the change handlers of a live object's cause.
func (pl *objectPlan) change(d decide.Decision) {
	finished := true
	for _, e := range d.Entries {
		if !pl.entry(d.Reason, e) {
			finished = false
		}
	}
	if d.Reason != "" && finished && len(d.Entries) > 0 {
		pl.do(Action{Do: ActionRecord, Text: "record the " + string(d.Reason) + " as handled"})
	}
	pl.idle(d.Change)
}

// deletion plans the delete path: delete handlers, then the finalizer.
func (pl *objectPlan) deletion(d decide.Decision) {
	finished, waits := true, false
	for _, e := range d.Entries {
		if !pl.entry(handlers.ReasonDelete, e) {
			finished = false
			// A retry that is due runs now, like a first call.
			h := pl.byID[e.Opts.ID]
			waits = waits || h.State == HandlerRetrying && h.NextAttempt != nil
		}
	}
	for _, r := range d.Spawn {
		pl.add(HandlerStatus{ID: r.Options.ID, Kind: r.Kind.String(), State: HandlerIdle, Message: "stopped: the object is being deleted"})
		pl.do(Action{Do: ActionStop, Handler: r.Options.ID, Text: "stop " + r.Kind.String() + " " + r.Options.ID})
	}
	for _, id := range d.Superseded {
		if pl.byID[id] == nil {
			h := recordStatus(id, pl.progress[id], pl.now)
			h.State, h.Message = HandlerIdle, strings.TrimSpace("superseded by the deletion; "+h.Message)
			pl.add(h)
		}
	}
	pl.idle(d.Change)
	switch {
	case finished:
		pl.releases = true
		pl.do(Action{Do: ActionReleaseFinalizer, Text: "release " + pl.held()})
	case !waits:
		// The delete handlers run now; the finalizer goes if they finish.
		pl.do(Action{Do: ActionReleaseFinalizer, Text: "release " + pl.held() + " once they are done"})
	}
}

// The owners of finalizers, as FinalizerStatus.Owner names them.
const (
	ownerGopf  = "gopf"
	ownerKopf  = "kopf"
	ownerOther = "other"
)

// held names the finalizers by which gopf holds the object: its own, and
// Kopf's, which setFinalizer releases with it.
func (pl *objectPlan) held() string {
	var names []string
	for _, name := range pl.in.Object.GetFinalizers() {
		switch owner := pl.finalizerOwner(name); owner {
		case ownerGopf:
			names = append(names, "finalizer "+name)
		case ownerKopf:
			names = append(names, "Kopf's finalizer "+name)
		}
	}
	return strings.Join(names, " and ")
}

// finalizerOwner is FinalizerStatus.Owner of a finalizer of the object.
func (pl *objectPlan) finalizerOwner(name string) string {
	switch name {
	case pl.kind.Finalizers.Own:
		return ownerGopf
	case pl.kind.Finalizers.Kopf:
		return ownerKopf
	}
	return ownerOther
}

// entry plans one handler of a cause, from its progress record as runEntry
// reads it; it reports whether the handler is finished.
func (pl *objectPlan) entry(reason handlers.Reason, e *decide.Entry) bool {
	id := e.Opts.ID
	rec := e.Record(reason, pl.progress)
	h := HandlerStatus{ID: id, Kind: e.Reg.Kind.String(), State: HandlerPending, Cause: string(reason), MaxAttempts: e.Opts.Retries}
	if rec != nil {
		h = recordStatus(id, rec, pl.now)
		h.Kind, h.MaxAttempts = e.Reg.Kind.String(), e.Opts.Retries
	}
	pl.add(h)
	switch h.State {
	case HandlerRetrying:
		text := fmt.Sprintf("continue %s (retry %d", id, h.Attempts)
		if h.NextAttempt != nil && h.NextAttempt.After(pl.now) {
			text += ", due at " + h.NextAttempt.UTC().Format(time.RFC3339)
		}
		pl.do(Action{Do: ActionContinue, Handler: id, Retry: h.Attempts, Due: h.NextAttempt, Text: text + ")"})
	case HandlerPending:
		verb := "call "
		if reason == handlers.ReasonDelete {
			verb = "run delete handler "
		}
		pl.do(Action{Do: ActionCall, Handler: id, Text: verb + id})
	}
	return h.State == HandlerDone || h.State == HandlerFailed
}

// idle reports the selected change handlers that the cause does not run:
// done for the last-handled state, or waiting for their cause.
func (pl *objectPlan) idle(change []*contract.Handler) {
	for _, r := range change {
		if pl.byID[r.Options.ID] != nil {
			continue
		}
		h := HandlerStatus{ID: r.Options.ID, Kind: r.Kind.String(), State: HandlerIdle}
		switch decide.ReasonOf(r) {
		case handlers.ReasonCreate, handlers.ReasonUpdate:
			if !pl.out.Handled {
				break
			}
			h.State, h.Cause, h.Since = HandlerDone, string(decide.ReasonOf(r)), pl.out.StateWritten
			h.Message = "nothing changed since the last-handled state"
			if f := pl.lastFailure(h.ID); f != nil {
				h.State, h.Since, h.Message = HandlerFailed, &f.Time, f.Message
			}
		case handlers.ReasonDelete:
			h.Message = "runs when the object is deleted"
		}
		pl.add(h)
	}
}

// failureWriteSlack is how long after a handler's HandlerFailed Event the
// state write of the same reconcile may come. A state written later than
// that belongs to a later cause, which the failure does not concern.
const failureWriteSlack = 10 * time.Second

// lastFailure returns the handler's permanent failure, from its Event,
// when the last-handled state is the one written with that failure.
func (pl *objectPlan) lastFailure(id string) *Failure {
	for i := len(pl.out.Failures) - 1; i >= 0; i-- {
		f := &pl.out.Failures[i]
		if f.Handler != id {
			continue
		}
		if w := pl.out.StateWritten; w == nil || !w.After(f.Time.Add(failureWriteSlack)) {
			return f
		}
		return nil
	}
	return nil
}

// finalizers explains each finalizer on the object.
func (pl *objectPlan) finalizers(generic bool) {
	for _, name := range pl.in.Object.GetFinalizers() {
		f := FinalizerStatus{Name: name, Owner: pl.finalizerOwner(name), Why: "another controller's: gopf leaves it alone"}
		switch f.Owner {
		case ownerGopf:
			f.Why = "gopf's: " + pl.finalizerReason(generic, true)
		case ownerKopf:
			f.Why = "Kopf's, which gopf answers for as for its own: " + pl.finalizerReason(generic, false)
		}
		pl.out.Finalizers = append(pl.out.Finalizers, f)
	}
}

// finalizerReason says why gopf holds the object by a finalizer; own is
// whether the finalizer is gopf's, which it removes from a live object that
// no handler needs, where Kopf's stays until the object is deleted.
func (pl *objectPlan) finalizerReason(generic, own bool) string {
	if generic {
		return "held while delete handlers, timers or daemons of the operator need the object"
	}
	var why []string
	for _, h := range pl.out.Handlers {
		for _, r := range pl.kind.Holders {
			if r.Options.ID != h.ID {
				continue
			}
			switch {
			case !contract.HoldsObjects(r):
			case r.Kind == spec.KindDelete:
				why = append(why, "delete handler "+h.ID)
			default:
				why = append(why, r.Kind.String()+" "+h.ID)
			}
		}
	}
	switch {
	case pl.releases:
		return "the delete path is done; released on start"
	case len(why) > 0:
		return "held for " + strings.Join(why, ", ")
	case !own:
		return "no handler needs it; it goes when the object is deleted"
	}
	return "no handler needs it any more; removed on start"
}

// summary is the object's state in one word, the worst of its handlers'.
func (pl *objectPlan) summary() string {
	out := pl.out
	if out.StateError != "" {
		return StateUnreadable
	}
	worst := ""
	for _, s := range []HandlerState{HandlerFailed, HandlerRetrying, HandlerPending} {
		for _, h := range out.Handlers {
			if h.State == s && worst == "" {
				worst = string(s)
			}
		}
	}
	switch {
	case out.Deleting != nil:
		return StateDeleting
	case worst != "":
		return worst
	case out.Handled:
		return string(HandlerDone)
	case len(out.Handlers) > 0:
		return string(HandlerIdle)
	}
	return StateUnhandled
}

// recordStatus reads one progress record.
func recordStatus(id string, rec *state.Progress, now time.Time) HandlerStatus {
	started := rec.Started
	h := HandlerStatus{ID: id, Cause: string(rec.Reason), Attempts: rec.Retries, Started: &started, Message: rec.Message}
	if started.IsZero() {
		h.Started = nil
	}
	switch {
	case rec.Success:
		h.State = HandlerDone
	case rec.Failure:
		h.State = HandlerFailed
	case rec.Retries > 0:
		h.State, h.NextAttempt = HandlerRetrying, rec.Delayed
	default:
		h.State, h.NextAttempt = HandlerPending, rec.Delayed
	}
	if h.NextAttempt != nil && !h.NextAttempt.After(now) {
		h.NextAttempt = nil // due now
	}
	return h
}

// stateWritten is when gopf last wrote the object's state, as the API
// server's managed fields record it: the newest entry that owns the field
// or annotation the state is kept in. nil if none does.
func stateWritten(obj metav1.Object, s state.Storage) *time.Time {
	var path []string
	switch s := s.(type) {
	case state.StatusStorage:
		path = []string{"f:status", "f:" + s.Field}
	case state.AnnotationStorage:
		path = []string{"f:metadata", "f:annotations", "f:" + s.EssenceKey()}
	default:
		return nil
	}
	var newest *time.Time
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil || mf.Time == nil {
			continue
		}
		var tree any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &tree) != nil {
			continue
		}
		if _, ok := state.Lookup(tree, path); ok && (newest == nil || mf.Time.After(*newest)) {
			t := mf.Time.Time
			newest = &t
		}
	}
	return newest
}

func sortedIDs(m map[string]*state.Progress) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
