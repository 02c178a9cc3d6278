package assign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/gopf-dev/gopf/internal/shard"
)

// rescueWorkers is how many patches a pass's rescue sweeps (see
// pass.rescue) have in flight at once. One at a time, the round trip of a
// patch (5 to 30 ms on a busy API server) and not RescuesPerSecond would
// bound how fast a dead shard's objects move.
const rescueWorkers = 8

// pass is one look at the ring's objects, with the ring of the shards
// available when it began (or when it last took the ring again).
type pass struct {
	*Assigner
	log      logr.Logger
	view     *View
	selector string // the objects that the sweep under way lists
	listing  bool   // whether the sweep under way counts its objects as Listed
	draining bool   // looking at drains now
	kindAt   int    // the index of the kind the sweep under way lists
	// round, in the rescue of the objects of shards that are not
	// available, is afterMark or upToMark: the objects after from, where
	// the last rescue got to, then those up to it; at is where this one
	// got to, saved as far as the assigner's Lease tells (see
	// ResumeAnnotation). Zero in the other sweeps.
	round           int
	from, at, saved mark
	// workers holds a token for each object decided in a worker of its
	// own, in a rescue sweep; nil in the other sweeps, which decide one
	// object after the other.
	workers  chan struct{}
	inflight sync.WaitGroup

	mu      sync.Mutex             // guards the rest: a rescue sweep's workers share it
	gen     uint64                 // the view's generation when the ring was taken
	states  map[string]shard.State // the shards' states then
	until   time.Time              // when one of them changes with time; zero for never
	ring    *shard.Ring
	counts  Counts
	failure error // the first failed patch
	// drains are the objects to drain, left until every other object of
	// the ring has been looked at (see pass).
	drains []pending
}

// pending is an object a pass comes back to.
type pending struct {
	kind Kind
	obj  *metav1.PartialObjectMetadata
}

// pass lists the ring's objects, metadata only, decides each object
// (Decide) and patches those that move. It first rescues the objects that
// no available shard holds (pass.rescue), then, unless it is narrow, looks
// at every object; the drains come last. A narrow pass is only the rescue
// (see cadence). If the shards change during the pass (pass.stale), it
// goes on with the new ring (pass.renew).
//
// The objects without a shard come first of all: no one handles them, as
// no one handles those of a shard that died, but they are new objects,
// which the watch of unassigned objects missed (created while no assigner
// led), and behind the moves of the dead shards' objects they could wait
// as long as replicas keep dying. Then the objects of the shards that are
// not available, and only those, where a list of every object started
// with thousands that needed nothing; and from where the last rescue got
// to, this leader's or the last one's (ResumeAnnotation), where each new
// leader of a crash-looping ring took them from the top again.
//
// Drains come last, after every object with no shard or a dead one has
// its shard: a drain only moves an object that a live shard handles, while
// an unassigned object is handled by no one until it is assigned. Were
// they written in list order, the write budget would go to the drains at
// the top of the list while the new objects at its end wait.
func (a *Assigner) pass(ctx context.Context, log logr.Logger, view *View, gen uint64, shards shard.Shards, narrow bool) (Counts, error) {
	p := &pass{Assigner: a, log: log, view: view}
	p.take(gen, shards)
	p.counts.Narrow = narrow
	errs := p.rescue(ctx, shards.Available(), narrow)
	if !narrow && ctx.Err() == nil {
		errs = append(errs, p.sweep(ctx, "", true)...)
	}
	if ctx.Err() != nil {
		return p.counts, ctx.Err()
	}
	p.draining, p.listing = true, false
	for _, d := range p.drains {
		if err := p.object(ctx, d.kind, d.obj); err != nil {
			return p.counts, err // the context's end
		}
	}
	if p.failure != nil {
		errs = append(errs, fmt.Errorf("%d patches failed, the first: %w", p.counts.Failed, p.failure))
	}
	return p.counts, errors.Join(errs...)
}

// rescue looks at the objects that no available shard holds: those
// without a shard, one after the other, then, with rescueWorkers patches
// in flight, those whose shard is not available (selectors the API
// server's watch cache answers), from where the last rescue got to and
// round to it (see ResumeAnnotation). The latter count as Listed in a
// narrow pass. With no shard available there is nowhere to put them.
//
// Objects without a shard are new, and the watch of unassigned objects
// assigns them as they appear; the pass only catches those it missed.
// Assigning them with patches in flight raced with that watch and, at
// the start of a ring in a namespace full of unassigned objects (those
// of another ring, in the bench), took the API server from under the
// new objects: their create handler ran 100 to 400 ms later at the
// median.
func (p *pass) rescue(ctx context.Context, available []string, narrow bool) []error {
	if len(available) == 0 {
		return nil
	}
	labelled, err := labels.NewRequirement(shard.ShardLabel(p.opts.Ring), selection.Exists, nil)
	if err != nil {
		return []error{fmt.Errorf("selecting the objects of shards that are not available: %w", err)}
	}
	elsewhere, err := labels.NewRequirement(shard.ShardLabel(p.opts.Ring), selection.NotIn, available)
	if err != nil {
		return []error{fmt.Errorf("selecting the objects of shards that are not available: %w", err)}
	}
	unplaced := labels.NewSelector().Add(*labelled, *elsewhere)
	errs := p.sweep(ctx, unassigned(p.opts.Ring), false)
	p.workers = make(chan struct{}, rescueWorkers)
	defer func() { p.workers = nil }()
	p.from, p.at, p.saved = p.resume, p.resume, p.resume
	for _, round := range []int{afterMark, upToMark} {
		if ctx.Err() != nil || round == upToMark && p.from == start {
			break
		}
		p.round = round
		if round == upToMark {
			p.at = start // where the second round got to, from the top
		}
		errs = append(errs, p.sweep(ctx, unplaced.String(), narrow)...)
	}
	p.round = 0
	p.keep(ctx)
	return errs
}

// The rounds of the rescue of the objects of shards that are not
// available (see pass.round).
const (
	afterMark = 1 + iota
	upToMark
)

// keep saves where the rescue got to, for this leader's next pass and,
// if it moved on, in the assigner's Lease for the next leader.
func (p *pass) keep(ctx context.Context) {
	if p.at != p.saved {
		p.saveMark(ctx, p.log, p.at)
		p.saved = p.at
	}
	p.resume = p.at
}

// sweep looks at the objects of every kind of the ring that selector
// selects (all if it is empty), counting them as Listed if listing, and
// returns the errors of the kinds it could not list, once every object
// it looked at is done with.
func (p *pass) sweep(ctx context.Context, selector string, listing bool) []error {
	p.selector, p.listing = selector, listing
	defer p.inflight.Wait()
	var errs []error
	for i, k := range p.opts.Kinds {
		p.kindAt = i
		if err := p.kind(ctx, k); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			errs = append(errs, err)
		}
	}
	return errs
}

// kind looks at every object of k in the assigner's namespaces.
func (p *pass) kind(ctx context.Context, k Kind) error {
	for _, objects := range p.resources(k) {
		if err := p.list(ctx, k, objects); err != nil {
			return err
		}
	}
	return nil
}

// resources are where the objects of k live that the assigner assigns:
// the whole resource, or one per namespace of Options.Namespaces.
func (a *Assigner) resources(k Kind) []metadata.ResourceInterface {
	all := a.opts.Metadata.Resource(k.Resource)
	if !k.Namespaced || len(a.opts.Namespaces) == 0 {
		return []metadata.ResourceInterface{all}
	}
	in := make([]metadata.ResourceInterface, len(a.opts.Namespaces))
	for i, ns := range a.opts.Namespaces {
		in[i] = all.Namespace(ns)
	}
	return in
}

// list looks at every object that objects lists, a page at a time.
func (p *pass) list(ctx context.Context, k Kind, objects metadata.ResourceInterface) error {
	opts := metav1.ListOptions{ResourceVersion: "0", LabelSelector: p.selector}
	if p.opts.PageSize > 0 {
		opts = metav1.ListOptions{Limit: p.opts.PageSize, LabelSelector: p.selector}
	}
	for {
		list, err := objects.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing %s: %w", k, err)
		}
		for i := range list.Items {
			if err := p.visit(ctx, k, &list.Items[i]); err != nil {
				return err
			}
		}
		if p.round != 0 {
			p.keep(ctx)
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// visit decides obj, of kind k, and acts on it: at once, or in a rescue
// sweep in a worker of its own, once fewer than rescueWorkers are busy.
// In a round of the rescue (see pass.round) it leaves the other round's
// objects alone.
func (p *pass) visit(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata) error {
	if p.round != 0 {
		here := markOf(p.kindAt, obj)
		if (p.round == afterMark) != p.from.before(here) {
			return nil // the other round's
		}
		if p.at.before(here) { // the lists of several namespaces need not come in order
			p.at = here
		}
	}
	if p.workers == nil {
		return p.object(ctx, k, obj)
	}
	select {
	case p.workers <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.inflight.Go(func() {
		defer func() { <-p.workers }()
		_ = p.object(ctx, k, obj) // its only error is the context's end, which the sweep sees
	})
	return nil
}

// object decides obj and acts on it. On a conflict it reads obj again and
// tries once more: a busy object would otherwise conflict on every pass,
// since the list is served a little late from the watch cache.
func (p *pass) object(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata) error {
	key, ok, _ := keyOf(p.opts.Kinds, k, obj)
	p.count(func(c *Counts) {
		if p.listing {
			c.Listed++
			if !ok {
				c.Skipped++
			}
		}
	})
	if !ok {
		return nil
	}
	for attempt := 0; ; attempt++ {
		d, bucket, later := p.decide(k, obj, key)
		if later {
			return nil
		}
		err := p.write(ctx, k, obj, d, bucket)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errStale):
			p.renew(ctx)
			attempt-- // decided on an old ring: no attempt was made
		case ctx.Err() != nil:
			return err
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt == 0:
			fresh, err := resource(p.opts.Metadata, k, obj).Get(ctx, obj.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				p.fail(err)
				return nil
			}
			obj = fresh
		case apierrors.IsConflict(err):
			p.count(func(c *Counts) { c.Conflicts++ })
			return nil
		default:
			p.fail(err)
			return nil
		}
	}
}

// decide returns what to write for obj, of kind k and with key on the
// ring, by the ring the pass holds now, and the bucket the write waits
// for: RescuesPerSecond's for an object that no available shard holds,
// DrainsPerSecond's for one that a live shard handles meanwhile (a drain,
// or a child that follows its owner to another shard). It returns true
// instead if there is nothing to write now: the object is where it
// belongs or waits (counted as Draining or Deferred), or it is to drain
// and the pass comes back to it last.
func (p *pass) decide(k Kind, obj *metav1.PartialObjectMetadata, key string) (Decision, flowcontrol.RateLimiter, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	choice := p.ring.ShardFor(key)
	d := Decide(obj, p.opts.Ring, choice, p.state)
	switch {
	case d.Action == Drain && k.Controlled:
		// Nothing runs on a child itself: it follows its owner at once.
		return Decision{Action: Reassign, Shard: choice}, p.drainBucket, false
	case d.Action == Drain && !p.draining:
		p.drains = append(p.drains, pending{kind: k, obj: obj})
		return d, nil, true
	case d.Action == Drain:
		return d, p.drainBucket, false
	case d.Action == Defer:
		p.counts.Deferred++
		return d, nil, true
	case d.Action == None:
		if shard.Draining(obj, p.opts.Ring) && p.state(shard.AssignedShard(obj, p.opts.Ring)).Available() {
			p.counts.Draining++
		}
		return d, nil, true
	}
	return d, p.rescueBucket, false
}

// count changes the pass's counts.
func (p *pass) count(change func(*Counts)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(&p.counts)
}

// state returns the state of shard s when the pass took its ring: Unknown
// for no member. The caller holds p.mu.
func (p *pass) state(s string) shard.State { return p.states[s] }

// fail counts a failed patch and keeps the first error.
func (p *pass) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Failed++
	if p.failure == nil {
		p.failure = err
	}
}

// write sends d's patch for obj once bucket allows a write, unless the
// ring changed meanwhile.
//
// Every patch carries the resourceVersion that d was decided on, so it
// applies only to the labels it saw. That matters most for Drain: had the
// shard acknowledged an earlier drain and the object been assigned anew
// since the list, an unlocked drain label would ask the new shard to let
// go for nothing. For Assign and Reassign it keeps an old decision from
// overwriting a newer label written by a webhook or by an assigner that
// led a moment before.
func (p *pass) write(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata, d Decision, bucket flowcontrol.RateLimiter) error {
	if err := bucket.Wait(ctx); err != nil {
		return err
	}
	if p.stale() {
		return errStale
	}
	if err := p.patch(ctx, k, obj, d); err != nil {
		return err
	}
	p.count(func(c *Counts) {
		switch d.Action {
		case Assign:
			c.Assigned++
		case Reassign:
			c.Reassigned++
		case Drain:
			c.Drained++
			c.Draining++
		}
	})
	return nil
}

// patch writes d's labels on obj, of kind k, if obj is still at the
// resourceVersion that d was decided on (see pass.write).
func (a *Assigner) patch(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata, d Decision) error {
	set := map[string]*string{}
	switch d.Action {
	case Drain:
		set[shard.DrainLabel(a.opts.Ring)] = ptrTo("true")
	default:
		set[shard.ShardLabel(a.opts.Ring)] = ptrTo(d.Shard)
		set[shard.DrainLabel(a.opts.Ring)] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": obj.ResourceVersion, "labels": set}})
	if err != nil {
		return err
	}
	if _, err := resource(a.opts.Metadata, k, obj).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("%s of %s %s/%s: %w", d.Action, k, obj.Namespace, obj.Name, err)
	}
	return nil
}

// take makes shards, read at the view's generation gen, the ring the pass
// decides with. The caller holds p.mu, or no worker runs yet.
func (p *pass) take(gen uint64, shards shard.Shards) {
	p.gen, p.ring, p.states, p.until = gen, shards.Ring(), make(map[string]shard.State, len(shards)), shards.Changes()
	for _, s := range shards {
		p.states[s.Name] = s.State
	}
}

// renew takes the ring as it is now, having claimed the Leases of the
// uncertain shards first (Assigner.claim), as the leader does before a
// pass: no object leaves a shard that may still work on it. The pass goes
// on from where it is with the new ring rather than start over from the
// top of the list: a ring that changes faster than a pass gets through
// the list (a replica killed every half minute, objects moved at a hundred
// writes a second) would otherwise keep every pass on the first objects,
// and those at the end of the list, new ones among them, would never get
// a shard. What the pass decided before stays; the ring's change brings
// another pass after this one (cadence.next), which moves what the old
// ring placed on a shard that has gone since.
//
// Of the workers of a rescue sweep that find the ring changed, the first
// takes the new ring, and the others decide with it.
func (p *pass) renew(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.staleLocked() {
		return
	}
	gen := p.view.generation()
	p.take(gen, p.claim(ctx, p.log, p.view, p.opts.Clock.Now()))
	p.counts.Renewed++
}

// stale reports whether the shards changed since the pass took its ring
// in a way that changes what it decides: a shard became available or
// unavailable, Ready or not (see Decide), or Uncertain, to be claimed at
// once rather than after the pass, which under a crash loop may outlast
// its leader.
func (p *pass) stale() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.staleLocked()
}

// staleLocked is stale for a caller that holds p.mu.
func (p *pass) staleLocked() bool {
	now := p.opts.Clock.Now()
	if p.view.generation() == p.gen && (p.until.IsZero() || now.Before(p.until)) {
		return false
	}
	shards := p.view.Shards(now)
	for _, s := range shards {
		if changes(p.states[s.Name], s.State) {
			return true
		}
	}
	for name, was := range p.states { // a Lease deleted
		if !slices.ContainsFunc(shards, func(s shard.Shard) bool { return s.Name == name }) && changes(was, shard.Unknown) {
			return true
		}
	}
	return false
}

// changes reports whether a shard going from state was to now changes what
// a pass decides: it became available or unavailable, Ready or not, or
// Uncertain (to claim). A shard that was not there was Unknown.
func changes(was, now shard.State) bool {
	return was.Available() != now.Available() || (was == shard.Ready) != (now == shard.Ready) ||
		(was == shard.Uncertain) != (now == shard.Uncertain)
}

// resource is where obj of kind k is read and patched.
func resource(c metadata.Interface, k Kind, obj metav1.Object) metadata.ResourceInterface {
	if k.Namespaced {
		return c.Resource(k.Resource).Namespace(obj.GetNamespace())
	}
	return c.Resource(k.Resource)
}

func ptrTo(s string) *string { return &s }
