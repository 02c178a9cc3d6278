package sharder

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopf-dev/gopf/test/bench/internal/calls"
)

// Version is one state of an object, as the test's watch saw it.
type Version struct {
	// At is when the watch saw it.
	At time.Time
	// Shard is the value of the ring's shard label; "" for none.
	Shard string
	// Draining: the ring's drain label is set.
	Draining bool
	// Finalizers is how many finalizers the object had.
	Finalizers int
	// Created and Updated: the create and the update handler's outcomes
	// are stored on the object.
	Created, Updated bool
	// Gone: the object was deleted; this is its last state.
	Gone bool
}

// Histories are the versions of each object, by name, in the order seen.
type Histories map[string][]Version

// Causes are the causes of the handler calls checked.
var Causes = []string{"create", "update", "delete"}

// Verdict is what the handler calls and the objects' histories show.
type Verdict struct {
	// Calls counts the calls of each cause.
	Calls map[string]int
	// PerReplica counts the calls of each replica, by cause.
	PerReplica map[string]map[string]int
	// Missing lists, by cause, the objects that had no call.
	Missing map[string][]string
	// Repeats are the objects and causes handled more than once.
	Repeats []Repeat
	// Misplaced are the calls made by another replica than the one the
	// object was labelled for.
	Misplaced []Misplaced
	// Left are the objects that were not gone at the end.
	Left []Leftover
	// Stray counts the calls for other objects or causes.
	Stray int
}

// Repeat is an object handled more than once for one cause.
type Repeat struct {
	Object, Cause string
	// Replicas made the calls, in their order.
	Replicas []string
}

// Misplaced is a call that the object's labels did not give to the
// replica that made it. The label checked is the one on the version that
// first showed the call's outcome stored (the delete's: the object's last
// version), which the call's own replica wrote: a drain may ask the shard
// to let go meanwhile, but the shard keeps the label until it has
// written the outcome.
type Misplaced struct {
	Object, Cause, Replica string
	// Shard is the shard label of that version; "" for none.
	Shard string
	// Seen: the watch saw a version with the outcome.
	Seen bool
}

// Leftover is an object still there at the end, and why.
type Leftover struct {
	Object     string
	Finalizers int
	Draining   bool
}

// Judge checks the calls recorded for the objects names against the
// objects' histories: one call per object and cause, made by the shard
// the object was labelled for, and every object gone.
func Judge(names []string, cs []calls.Call, h Histories) Verdict {
	v := Verdict{Calls: map[string]int{}, PerReplica: map[string]map[string]int{}, Missing: map[string][]string{}}
	byKey := map[[2]string][]calls.Call{}
	for _, c := range cs {
		if !slices.Contains(Causes, c.Cause) || h[c.Object] == nil {
			v.Stray++
			continue
		}
		v.Calls[c.Cause]++
		if v.PerReplica[c.Replica] == nil {
			v.PerReplica[c.Replica] = map[string]int{}
		}
		v.PerReplica[c.Replica][c.Cause]++
		byKey[[2]string{c.Object, c.Cause}] = append(byKey[[2]string{c.Object, c.Cause}], c)
	}
	for _, name := range names {
		for _, cause := range Causes {
			v.judgeOne(name, cause, byKey[[2]string{name, cause}], h[name])
		}
		if vs := h[name]; len(vs) == 0 || !vs[len(vs)-1].Gone {
			v.Left = append(v.Left, leftover(name, vs))
		}
	}
	return v
}

// judgeOne checks the calls of one object and cause.
func (v *Verdict) judgeOne(name, cause string, cs []calls.Call, vs []Version) {
	switch {
	case len(cs) == 0:
		v.Missing[cause] = append(v.Missing[cause], name)
	case len(cs) > 1:
		slices.SortStableFunc(cs, func(a, b calls.Call) int { return a.At.Compare(b.At) })
		r := Repeat{Object: name, Cause: cause}
		for _, c := range cs {
			r.Replicas = append(r.Replicas, c.Replica)
		}
		v.Repeats = append(v.Repeats, r)
	default:
		shard, seen := outcomeShard(vs, cause)
		if !seen || shard != cs[0].Replica {
			v.Misplaced = append(v.Misplaced, Misplaced{Object: name, Cause: cause, Replica: cs[0].Replica, Shard: shard, Seen: seen})
		}
	}
}

// outcomeShard returns the shard label of the first version that shows
// the outcome of cause stored, and whether there is one.
func outcomeShard(vs []Version, cause string) (string, bool) {
	for _, ver := range vs {
		if (cause == "create" && ver.Created) || (cause == "update" && ver.Updated) || (cause == "delete" && ver.Gone) {
			return ver.Shard, true
		}
	}
	return "", false
}

func leftover(name string, vs []Version) Leftover {
	l := Leftover{Object: name}
	if len(vs) > 0 {
		l.Finalizers, l.Draining = vs[len(vs)-1].Finalizers, vs[len(vs)-1].Draining
	}
	return l
}

// Failed reports whether the verdict breaks the contract.
func (v Verdict) Failed() bool {
	missing := 0
	for _, names := range v.Missing {
		missing += len(names)
	}
	return missing+len(v.Repeats)+len(v.Misplaced)+len(v.Left)+v.Stray > 0
}

// Changes counts, among the versions seen in [from, to), the changes of
// an object's sharding labels (an assignment, a drain, a drain's
// acknowledgement) and the moves (an object labelled for another shard
// than the one it was last labelled for).
func (h Histories) Changes(from, to time.Time) (changes, moves int) {
	for _, vs := range h {
		last := ""
		for i, ver := range vs {
			in := !ver.At.Before(from) && ver.At.Before(to) && !ver.Gone
			if in && i > 0 && (ver.Shard != vs[i-1].Shard || ver.Draining != vs[i-1].Draining) {
				changes++
			}
			if ver.Shard != "" && last != "" && ver.Shard != last && in {
				moves++
			}
			if ver.Shard != "" {
				last = ver.Shard
			}
		}
	}
	return changes, moves
}

// ShardsAt counts the objects labelled for each shard at t, as last seen
// before t; objects with no label count under "".
func (h Histories) ShardsAt(t time.Time) map[string]int {
	out := map[string]int{}
	for _, vs := range h {
		i := slices.IndexFunc(vs, func(ver Version) bool { return ver.At.After(t) })
		if i < 0 {
			i = len(vs)
		}
		if i > 0 && !vs[i-1].Gone {
			out[vs[i-1].Shard]++
		}
	}
	return out
}

// Summary says in one line what the verdict found, with a few examples of
// each finding.
func (v Verdict) Summary() string {
	var parts []string
	for _, cause := range Causes {
		if names := v.Missing[cause]; len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%d objects without a %s call (%s)", len(names), cause, examples(names)))
		}
	}
	if len(v.Repeats) > 0 {
		ex := make([]string, 0, len(v.Repeats))
		for _, r := range v.Repeats {
			ex = append(ex, fmt.Sprintf("%s %s on %s", r.Object, r.Cause, strings.Join(r.Replicas, ", ")))
		}
		parts = append(parts, fmt.Sprintf("%d repeats (%s)", len(v.Repeats), examples(ex)))
	}
	if len(v.Misplaced) > 0 {
		ex := make([]string, 0, len(v.Misplaced))
		for _, m := range v.Misplaced {
			ex = append(ex, m.String())
		}
		parts = append(parts, fmt.Sprintf("%d calls off their shard (%s)", len(v.Misplaced), examples(ex)))
	}
	if len(v.Left) > 0 {
		ex := make([]string, 0, len(v.Left))
		for _, l := range v.Left {
			ex = append(ex, fmt.Sprintf("%s with %d finalizers, draining %t", l.Object, l.Finalizers, l.Draining))
		}
		parts = append(parts, fmt.Sprintf("%d objects left (%s)", len(v.Left), examples(ex)))
	}
	if v.Stray > 0 {
		parts = append(parts, fmt.Sprintf("%d calls for other objects or causes", v.Stray))
	}
	if len(parts) == 0 {
		return "every object had one call per cause, on its shard, and is gone"
	}
	return strings.Join(parts, "; ")
}

func (m Misplaced) String() string {
	switch {
	case !m.Seen:
		return fmt.Sprintf("%s %s on %s, its outcome never seen", m.Object, m.Cause, m.Replica)
	case m.Shard == "":
		return fmt.Sprintf("%s %s on %s, stored while unlabelled", m.Object, m.Cause, m.Replica)
	default:
		return fmt.Sprintf("%s %s on %s, stored while labelled for %s", m.Object, m.Cause, m.Replica, m.Shard)
	}
}

// examples joins the first five of list, saying how many more there are.
func examples(list []string) string {
	if len(list) <= 5 {
		return strings.Join(list, "; ")
	}
	return strings.Join(list[:5], "; ") + fmt.Sprintf("; %d more", len(list)-5)
}
