//go:build linux

package bench

import (
	"slices"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// Duplicate is a handler call for an object and cause that another replica
// had already made: the object was handled twice.
type Duplicate struct {
	Object string `json:"object"`
	Cause  string `json:"cause"`
	// First and Again are the replicas of the earlier and the later call.
	First string `json:"first"`
	Again string `json:"again"`
	// CutByKill: the earlier replica was killed (SIGKILL) after its call
	// began and before the later one, and the call's outcome had not been
	// seen stored before the kill. Going on after such a call is what
	// gopf promises: a handler whose outcome was not stored runs again.
	CutByKill bool `json:"cutByKill,omitempty"`
}

// duplicates finds, in calls of several replicas, every call for an
// object and cause that a different replica had made before. killed holds
// when each killed replica was killed; stored, per cause, when the
// object was first seen with that cause's outcome stored (missing:
// never seen, or the outcome is not visible, as for delete). A call made
// again by the same replica is not a duplicate between replicas; a retry
// within one process is the engine's business.
func duplicates(cs []calls.Call, killed map[string]time.Time, stored map[string]map[string]time.Time) []Duplicate {
	type key struct{ object, cause string }
	byKey := map[key][]calls.Call{}
	var keys []key
	for _, c := range cs {
		if c.Object == "" {
			continue
		}
		k := key{c.Object, c.Cause}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], c)
	}
	var out []Duplicate
	for _, k := range keys {
		list := byKey[k]
		slices.SortStableFunc(list, func(a, b calls.Call) int { return a.At.Compare(b.At) })
		for i := 1; i < len(list); i++ {
			prev, c := list[i-1], list[i]
			if prev.Replica == c.Replica {
				continue
			}
			out = append(out, Duplicate{Object: k.object, Cause: k.cause, First: prev.Replica, Again: c.Replica,
				CutByKill: cutByKill(prev, c, killed[prev.Replica], stored[k.cause][k.object])})
		}
	}
	return out
}

// cutByKill reports whether the call first, made again as again, was cut
// by the kill of its replica at kill (zero: never killed): the kill fell
// between the two calls and before the outcome was seen stored (zero: not
// seen).
func cutByKill(first, again calls.Call, kill, stored time.Time) bool {
	if kill.IsZero() || kill.Before(first.At) || kill.After(again.At) {
		return false
	}
	return stored.IsZero() || stored.After(kill)
}

// countDuplicates returns how many duplicates were cut by a kill and how
// many were not.
func countDuplicates(ds []Duplicate) (cut, other int) {
	for _, d := range ds {
		if d.CutByKill {
			cut++
		} else {
			other++
		}
	}
	return cut, other
}
