package assign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/gopf-dev/gopf/internal/shard"
)

// Counts are what one pass over the ring's objects saw and did.
type Counts struct {
	// Narrow is true for a pass that listed only the objects without an
	// available shard (see cadence).
	Narrow bool
	// Listed objects were looked at in the pass's list of the ring's
	// objects (of a narrow pass: of those without an available shard); the
	// objects without a shard that a pass over every object looks at first
	// are listed again there.
	Listed int
	// Assigned, Reassigned and Drained count the patches of each Action
	// that the API server accepted.
	Assigned, Reassigned, Drained int
	// Draining objects wait for their shard to acknowledge a drain, this
	// pass's included.
	Draining int
	// Skipped objects cannot be assigned: children without a controller of
	// a main kind.
	Skipped int
	// Conflicts are patches refused twice because the object changed
	// meanwhile; a pass soon after looks again.
	Conflicts int
	// Failed patches met another error, logged once per pass.
	Failed int
	// Renewed counts the changes of the available shards during the pass,
	// after which it went on with the new ring (see pass.renew).
	Renewed int
}

// log writes the pass's line: at Info if it wrote anything, left objects
// draining or failed, at V(1) if the ring was already as it should be.
func (c Counts) log(log logr.Logger, available []string, err error) {
	kv := []any{"shards", available, "narrow", c.Narrow, "listed", c.Listed, "assigned", c.Assigned, "reassigned", c.Reassigned,
		"drained", c.Drained, "draining", c.Draining, "skipped", c.Skipped, "conflicts", c.Conflicts, "failed", c.Failed, "renewed", c.Renewed}
	switch {
	case err != nil:
		log.Error(err, "pass over the ring's objects", kv...)
	case c.Assigned+c.Reassigned+c.Drained+c.Draining+c.Conflicts+c.Renewed > 0:
		log.Info("pass over the ring's objects", kv...)
	default:
		log.V(1).Info("pass over the ring's objects", kv...)
	}
}

// pass is one look at every object of the ring, with the ring of shards'
// available shards.
type pass struct {
	*Assigner
	log       logr.Logger
	view      *View
	selector  string          // the objects that the sweep under way lists
	listing   bool            // whether the sweep under way counts its objects as Listed
	gen       uint64          // the view's generation when the ring was taken
	available map[string]bool // the shards available then
	ring      *shard.Ring
	counts    Counts
	failure   error // the first failed patch
	// drains are the objects to drain, left until every other object of
	// the ring has been looked at (see pass).
	drains   []pending
	draining bool // looking at drains now
}

// pending is an object a pass comes back to.
type pending struct {
	kind Kind
	obj  *metav1.PartialObjectMetadata
}

// pass lists every kind of the ring, metadata only, decides each object
// (Decide) and patches those that move, at most WritesPerSecond. A narrow
// pass lists only the objects whose shard label names no available shard
// (none, or a shard that is gone): those the ring's change cannot have
// touched are left out (see cadence). If the available shards change
// during the pass, it goes on with the new ring (pass.renew).
//
// A pass over every object looks at the objects without a shard first (a
// list selecting on the shard label's absence): like those of a shard
// that died, no one handles them until they are assigned, but they are
// new objects, which the watch of unassigned objects missed (created while
// no assigner led), and at the end of the list they would wait behind the
// moves of every dead shard's objects, which at a hundred writes a second
// take longer than the ring stays the same when replicas die one after
// the other.
//
// Drains come last, after every object with no shard or a dead one has
// its shard: a drain only moves an object that a live shard handles, while
// an unassigned object is handled by no one until it is assigned. Were
// they written in list order, the write budget would go to the drains at
// the top of the list while the new objects at its end wait.
func (a *Assigner) pass(ctx context.Context, log logr.Logger, view *View, gen uint64, shards shard.Shards, narrow bool) (Counts, error) {
	p := &pass{Assigner: a, log: log, view: view}
	p.take(gen, shards)
	var errs []error
	if narrow {
		unplaced, err := labels.NewRequirement(shard.ShardLabel(a.opts.Ring), selection.NotIn, shards.Available())
		if err != nil {
			return p.counts, fmt.Errorf("selecting the objects without an available shard: %w", err)
		}
		p.counts.Narrow = true
		errs = p.sweep(ctx, unplaced.String(), true)
	} else {
		errs = append(p.sweep(ctx, unassigned(a.opts.Ring), false), p.sweep(ctx, "", true)...)
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

// sweep looks at the objects of every kind of the ring that selector
// selects (all if it is empty), counting them as Listed if listing, and
// returns the errors of the kinds it could not list.
func (p *pass) sweep(ctx context.Context, selector string, listing bool) []error {
	p.selector, p.listing = selector, listing
	var errs []error
	for _, k := range p.opts.Kinds {
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
			if err := p.object(ctx, k, &list.Items[i]); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// object decides obj and acts on it. On a conflict it reads obj again and
// tries once more: a busy object would otherwise conflict on every pass,
// since the list is served a little late from the watch cache.
func (p *pass) object(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata) error {
	if p.listing {
		p.counts.Listed++
	}
	key, ok, _ := keyOf(p.opts.Kinds, k, obj)
	if !ok {
		if p.listing {
			p.counts.Skipped++
		}
		return nil
	}
	for attempt := 0; ; attempt++ {
		choice := p.ring.ShardFor(key)
		d := Decide(obj, p.opts.Ring, choice, p.isAvailable)
		if d.Action == Drain && k.Controlled {
			// Nothing runs on a child itself: it follows its owner at once.
			d = Decision{Action: Reassign, Shard: choice}
		}
		if d.Action == Drain && !p.draining {
			p.drains = append(p.drains, pending{kind: k, obj: obj})
			return nil
		}
		if d.Action == None {
			if shard.Draining(obj, p.opts.Ring) && p.isAvailable(shard.AssignedShard(obj, p.opts.Ring)) {
				p.counts.Draining++
			}
			return nil
		}
		err := p.write(ctx, k, obj, d)
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
			p.counts.Conflicts++
			return nil
		default:
			p.fail(err)
			return nil
		}
	}
}

// isAvailable reports whether s was available when the pass began.
func (p *pass) isAvailable(s string) bool { return p.available[s] }

// fail counts a failed patch and keeps the first error.
func (p *pass) fail(err error) {
	p.counts.Failed++
	if p.failure == nil {
		p.failure = err
	}
}

// write sends d's patch for obj once a write is allowed, unless the ring
// changed meanwhile.
//
// Every patch carries the resourceVersion that d was decided on, so it
// applies only to the labels it saw. That matters most for Drain: had the
// shard acknowledged an earlier drain and the object been assigned anew
// since the list, an unlocked drain label would ask the new shard to let
// go for nothing. For Assign and Reassign it keeps an old decision from
// overwriting a newer label written by a webhook or by an assigner that
// led a moment before.
func (p *pass) write(ctx context.Context, k Kind, obj *metav1.PartialObjectMetadata, d Decision) error {
	if err := p.limiter.Wait(ctx); err != nil {
		return err
	}
	if p.stale() {
		return errStale
	}
	if err := p.patch(ctx, k, obj, d); err != nil {
		return err
	}
	switch d.Action {
	case Assign:
		p.counts.Assigned++
	case Reassign:
		p.counts.Reassigned++
	case Drain:
		p.counts.Drained++
		p.counts.Draining++
	}
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
// decides with.
func (p *pass) take(gen uint64, shards shard.Shards) {
	p.gen, p.ring, p.available = gen, shards.Ring(), map[string]bool{}
	for _, s := range shards.Available() {
		p.available[s] = true
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
func (p *pass) renew(ctx context.Context) {
	gen := p.view.generation()
	p.take(gen, p.claim(ctx, p.log, p.view, p.opts.Clock.Now()))
	p.counts.Renewed++
}

// stale reports whether the available shards changed since the pass
// took its ring.
func (p *pass) stale() bool {
	if p.view.generation() == p.gen {
		return false
	}
	now := p.view.Shards(p.opts.Clock.Now()).Available()
	return len(now) != len(p.available) || slices.ContainsFunc(now, func(s string) bool { return !p.available[s] })
}

// resource is where obj of kind k is read and patched.
func resource(c metadata.Interface, k Kind, obj metav1.Object) metadata.ResourceInterface {
	if k.Namespaced {
		return c.Resource(k.Resource).Namespace(obj.GetNamespace())
	}
	return c.Resource(k.Resource)
}

func ptrTo(s string) *string { return &s }
