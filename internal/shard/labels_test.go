package shard

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestLabelsAreTheReferencesWithTheRingNameAsItIs(t *testing.T) {
	for got, want := range map[string]string{
		RingLabel:                           "alpha.sharding.timebertt.dev/controllerring",
		ShardLabel("my-ring"):               "shard.alpha.sharding.timebertt.dev/my-ring",
		DrainLabel("my-ring"):               "drain.alpha.sharding.timebertt.dev/my-ring",
		ShardLabel(strings.Repeat("r", 63)): "shard.alpha.sharding.timebertt.dev/" + strings.Repeat("r", 63),
	} {
		if got != want {
			t.Errorf("label %q, want %q", got, want)
		}
	}
}

func TestRingNamesThatCannotBeInALabelKeyAreRejected(t *testing.T) {
	for _, ring := range []string{"my-ring", "kube-controller-manager-deployment", "a.b", strings.Repeat("r", 63)} {
		if err := ValidateRing(ring); err != nil {
			t.Errorf("ValidateRing(%q) = %v, want nil", ring, err)
		}
	}
	for ring, why := range map[string]string{
		"":                      "empty",
		strings.Repeat("r", 64): "63",
		"My-Ring":               "lower case",
		"my ring":               "alphanumeric",
		"-ring":                 "alphanumeric",
		"ring/x":                "ring/x",
	} {
		err := ValidateRing(ring)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ValidateRing(%q) = %v, want an error saying %q", ring, err, why)
		}
	}
}

func TestShardNamesThatCannotNameALeaseOrBeALabelValueAreRejected(t *testing.T) {
	for _, shard := range []string{"operator-7d9f8c6b5-abcde", "s0", "node.example.com"} {
		if err := ValidateShard(shard); err != nil {
			t.Errorf("ValidateShard(%q) = %v, want nil", shard, err)
		}
	}
	for shard, why := range map[string]string{
		"":                      "empty",
		strings.Repeat("s", 64): "63",
		"Shard":                 "lower case",
		"shard_1":               "shard_1",
	} {
		err := ValidateShard(shard)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ValidateShard(%q) = %v, want an error saying %q", shard, err, why)
		}
	}
}

func TestTheAssignedSelectorMatchesTheShardsObjectsAndThoseBeingDrained(t *testing.T) {
	sel, err := AssignedSelector("ring", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for set, want := range map[string]bool{
		"shard.alpha.sharding.timebertt.dev/ring=s1":                                              true,
		"shard.alpha.sharding.timebertt.dev/ring=s1,drain.alpha.sharding.timebertt.dev/ring=true": true,
		"shard.alpha.sharding.timebertt.dev/ring=s2":                                              false,
		"shard.alpha.sharding.timebertt.dev/other=s1":                                             false,
		"": false,
	} {
		l, err := labels.ConvertSelectorToLabelsMap(set)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(l); got != want {
			t.Errorf("%s matches {%s}: %v, want %v", sel, set, got, want)
		}
	}
	if _, err := AssignedSelector("ring", ""); err == nil {
		t.Error("AssignedSelector with an empty shard name: no error")
	}
	if _, err := AssignedSelector("", "s1"); err == nil {
		t.Error("AssignedSelector with an empty ring name: no error")
	}
}

func TestTheRingSelectorMatchesTheRingsLeases(t *testing.T) {
	sel, err := RingSelector("ring")
	if err != nil {
		t.Fatal(err)
	}
	if want := "alpha.sharding.timebertt.dev/controllerring=ring"; sel.String() != want {
		t.Errorf("RingSelector = %s, want %s", sel, want)
	}
}

func TestUnassignAcknowledgesADrainAndLeavesOtherLabels(t *testing.T) {
	obj := &metav1.ObjectMeta{Labels: map[string]string{
		ShardLabel("ring"): "s1", DrainLabel("ring"): "true", ShardLabel("other"): "s9", "app": "web",
	}}
	if AssignedShard(obj, "ring") != "s1" || !Draining(obj, "ring") {
		t.Fatalf("AssignedShard, Draining = %q, %v: want s1, true", AssignedShard(obj, "ring"), Draining(obj, "ring"))
	}
	if !Unassign(obj, "ring") {
		t.Error("Unassign removed nothing")
	}
	want := map[string]string{ShardLabel("other"): "s9", "app": "web"}
	if !labels.Equals(obj.Labels, want) {
		t.Errorf("labels after Unassign: %v, want %v", obj.Labels, want)
	}
	if AssignedShard(obj, "ring") != "" || Draining(obj, "ring") {
		t.Error("still assigned or draining after Unassign")
	}
	if Unassign(obj, "ring") {
		t.Error("a second Unassign removed something")
	}
}
