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
	// Listed objects were looked at.
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
}

// log writes the pass's line: at Info if it wrote anything, left objects
// draining or failed, at V(1) if the ring was already as it should be.
func (c Counts) log(log logr.Logger, available []string, err error) {
	kv := []any{"shards", available, "narrow", c.Narrow, "listed", c.Listed, "assigned", c.Assigned, "reassigned", c.Reassigned,
		"drained", c.Drained, "draining", c.Draining, "skipped", c.Skipped, "conflicts", c.Conflicts, "failed", c.Failed}
	switch {
	case err != nil:
		log.Error(err, "pass over the ring's objects", kv...)
	case c.Assigned+c.Reassigned+c.Drained+c.Draining+c.Conflicts > 0:
		log.Info("pass over the ring's objects", kv...)
	default:
		log.V(1).Info("pass over the ring's objects", kv...)
	}
}

// pass is one look at every object of the ring, with the ring of shards'
// available shards.
type pass struct {
	*Assigner
	view      *View
	selector  string          // of a narrow pass: the objects without an available shard
	gen       uint64          // the view's generation at the start
	available map[string]bool // the shards available at the start
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
// touched are left out (see cadence). It stops
// with errStale before a write if the available shards changed since it
// began: the caller starts over with the new ring rather than finish with
// an old one.
//
// Drains come last, after every object with no shard or a dead one has
// its shard: a drain only moves an object that a live shard handles, while
// an unassigned object is handled by no one until it is assigned. Were
// they written in list order, every change of the ring (a pass starts over
// from the top) would spend the write budget on the drains at the top of
// the list again and the new objects at its end would wait for as long as
// the ring keeps changing.
func (a *Assigner) pass(ctx context.Context, view *View, shards shard.Shards, narrow bool) (Counts, error) {
	p := &pass{Assigner: a, view: view, gen: view.generation(), available: map[string]bool{}, ring: shards.Ring()}
	for _, s := range shards.Available() {
		p.available[s] = true
	}
	if narrow {
		unplaced, err := labels.NewRequirement(shard.ShardLabel(a.opts.Ring), selection.NotIn, shards.Available())
		if err != nil {
			return p.counts, fmt.Errorf("selecting the objects without an available shard: %w", err)
		}
		p.selector, p.counts.Narrow = unplaced.String(), true
	}
	var errs []error
	for _, k := range a.opts.Kinds {
		if err := p.kind(ctx, k); err != nil {
			if errors.Is(err, errStale) || ctx.Err() != nil {
				return p.counts, err
			}
			errs = append(errs, err)
		}
	}
	p.draining = true
	for _, d := range p.drains {
		if err := p.object(ctx, d.kind, d.obj); err != nil {
			return p.counts, err // errStale or the context's end
		}
	}
	if p.failure != nil {
		errs = append(errs, fmt.Errorf("%d patches failed, the first: %w", p.counts.Failed, p.failure))
	}
	return p.counts, errors.Join(errs...)
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
	if !p.draining {
		p.counts.Listed++
	}
	key, ok, _ := keyOf(p.opts.Kinds, k, obj)
	if !ok {
		p.counts.Skipped++
		return nil
	}
	choice := p.ring.ShardFor(key)
	for attempt := 0; ; attempt++ {
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
		case errors.Is(err, errStale), ctx.Err() != nil:
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

// stale reports whether the available shards changed since the pass
// began.
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
