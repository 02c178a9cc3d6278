package shard

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels of the reference design (timebertt/kubernetes-controller-
// sharding, API version alpha). Their spelling is the contract with its
// sharder: a gopf shard and the reference sharder read each other's labels.
const (
	// RingLabel is the label on a shard's Lease that names the ring the
	// shard is a member of; its value is the ring's name.
	RingLabel = "alpha.sharding.timebertt.dev/controllerring"

	// ShardLabelPrefix begins the key of the label that assigns an object
	// to a shard of a ring: the ring's name follows (ShardLabel).
	ShardLabelPrefix = "shard.alpha.sharding.timebertt.dev/"

	// DrainLabelPrefix begins the key of the label that asks an object's
	// shard to let go of it: the ring's name follows (DrainLabel).
	DrainLabelPrefix = "drain.alpha.sharding.timebertt.dev/"
)

// ShardLabel is the key of the label whose value names the shard of ring
// that an object is assigned to. The ring's name is used as it is, not
// hashed or shortened, which is why it may have at most 63 characters
// (ValidateRing).
func ShardLabel(ring string) string { return ShardLabelPrefix + ring }

// DrainLabel is the key of the label that asks the object's shard of ring
// to stop working on it and acknowledge by removing both this label and
// ShardLabel (Unassign). Its value means nothing; its presence does.
func DrainLabel(ring string) string { return DrainLabelPrefix + ring }

// ValidateRing returns an error unless ring can name a ring: it is the
// name of the reference's cluster-scoped ControllerRing (a DNS subdomain),
// the value of RingLabel and the name part of ShardLabel and DrainLabel
// (so at most 63 characters).
func ValidateRing(ring string) error {
	if ring == "" {
		return errors.New("the ring's name is empty")
	}
	problems := validation.IsDNS1123Subdomain(ring)
	problems = append(problems, validation.IsQualifiedName(ShardLabel(ring))...)
	problems = append(problems, validation.IsValidLabelValue(ring)...)
	if len(problems) > 0 {
		return fmt.Errorf("ring name %q cannot name a ring, whose name is a label's value and part of a label's key: %s",
			ring, strings.Join(dedupe(problems), "; "))
	}
	return nil
}

// ValidateShard returns an error unless shard can name a shard: it is the
// name of the shard's Lease (a DNS subdomain), the Lease's holder identity
// and the value of ShardLabel on the shard's objects (so at most 63
// characters).
func ValidateShard(shard string) error {
	if shard == "" {
		return errors.New("the shard's name is empty")
	}
	problems := validation.IsDNS1123Subdomain(shard)
	problems = append(problems, validation.IsValidLabelValue(shard)...)
	if len(problems) > 0 {
		return fmt.Errorf("shard name %q cannot name a shard, whose name names its Lease and is a label's value: %s",
			shard, strings.Join(dedupe(problems), "; "))
	}
	return nil
}

// dedupe drops repeated messages, keeping the first of each.
func dedupe(msgs []string) []string {
	seen := map[string]bool{}
	out := msgs[:0]
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// AssignedSelector selects the objects assigned to shard of ring, those
// with ShardLabel(ring) = shard, including those being drained from it.
// It is what a shard's cache selects, for every kind of the ring
// (cache.Options.DefaultLabelSelector, or cache.ByObject.Label per kind),
// so that it watches and keeps only its own objects.
func AssignedSelector(ring, shard string) (labels.Selector, error) {
	if err := ValidateRing(ring); err != nil {
		return nil, err
	}
	if err := ValidateShard(shard); err != nil {
		return nil, err
	}
	return labels.SelectorFromValidatedSet(labels.Set{ShardLabel(ring): shard}), nil
}

// RingSelector selects the Leases of the shards of ring: what an assigner
// lists or watches to learn the ring's members (ShardsOf).
func RingSelector(ring string) (labels.Selector, error) {
	if err := ValidateRing(ring); err != nil {
		return nil, err
	}
	return labels.SelectorFromValidatedSet(labels.Set{RingLabel: ring}), nil
}

// AssignedShard returns the shard of ring that obj is assigned to, or ""
// if it is not assigned.
func AssignedShard(obj metav1.Object, ring string) string {
	return obj.GetLabels()[ShardLabel(ring)]
}

// Draining reports whether obj's shard of ring is asked to let go of it.
// A shard that sees this stops all work on obj (handlers, timers, daemons)
// and then acknowledges with Unassign.
func Draining(obj metav1.Object, ring string) bool {
	_, ok := obj.GetLabels()[DrainLabel(ring)]
	return ok
}

// Unassign removes ShardLabel(ring) and DrainLabel(ring) from obj's labels
// in memory, and reports whether there was anything to remove. Sent as a
// patch with optimistic locking, it is the shard's acknowledgement of a
// drain: the assigner may then give obj to another shard.
func Unassign(obj metav1.Object, ring string) bool {
	l := obj.GetLabels()
	_, assigned := l[ShardLabel(ring)]
	_, draining := l[DrainLabel(ring)]
	if !assigned && !draining {
		return false
	}
	delete(l, ShardLabel(ring))
	delete(l, DrainLabel(ring))
	obj.SetLabels(l)
	return true
}
