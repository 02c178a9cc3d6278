package decide

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gopf-dev/gopf/internal/contract"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// changeHandlers are a create, update, field (spec.field), resume and
// delete handler.
func changeHandlers() []*contract.Handler {
	h := func(kind spec.Kind, id string, field ...string) *contract.Handler {
		return &contract.Handler{Kind: kind, Options: spec.Options{ID: id, Field: field}}
	}
	return []*contract.Handler{h(spec.KindCreate, "create"), h(spec.KindUpdate, "update"), h(spec.KindField, "field", "spec", "field"),
		h(spec.KindResume, "resume"), h(spec.KindDelete, "delete")}
}

// The planner shows what a process that has just started does
// (internal/plan tests that it tells decide's story); these are the cases
// where the process's memory of the object makes the difference.
func TestWhatTheProcessRemembersChangesTheDecision(t *testing.T) {
	const before, after = `{"spec":{"field":"before"}}`, `{"spec":{"field":"after"}}`
	fin := Finalizers{Own: "gopf.dev/finalizer", Kopf: "kopf.zalando.org/KopfFinalizerMarker"}
	all := changeHandlers()
	noDelete := all[:4]
	for name, tc := range map[string]struct {
		change     []*contract.Handler
		finalizers []string
		deleting   bool
		mem        Memory
		handled    string
		want       string
	}{
		"no handler needs the finalizer any more": {change: noDelete, finalizers: []string{fin.Own}, handled: after,
			mem: Memory{Resumed: true}, want: `route 1, finalizer 2, "", resume false, entries []`},
		"a handled object seen before needs nothing": {change: all, finalizers: []string{fin.Own}, handled: after,
			mem: Memory{Resumed: true}, want: `route 1, finalizer 0, "", resume false, entries []`},
		"a handled object on first sight is resumed": {change: all, finalizers: []string{fin.Own}, handled: after,
			want: `route 1, finalizer 0, "resume", resume true, entries [resume]`},
		"a change seen before is an update of the changed field": {change: all, finalizers: []string{fin.Own}, handled: before,
			mem: Memory{Resumed: true}, want: `route 1, finalizer 0, "update", resume false, entries [update field]`},
		"Kopf's finalizer does for gopf's": {change: all, finalizers: []string{fin.Kopf}, handled: after,
			mem: Memory{Resumed: true}, want: `route 1, finalizer 0, "", resume false, entries []`},
		"a released object waits for the cache": {change: all, finalizers: []string{fin.Own}, deleting: true, handled: after,
			mem: Memory{Resumed: true, Released: true}, want: `route 4, finalizer 0, "", resume false, entries []`},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Finalizers: tc.finalizers}}
			if tc.deleting {
				obj.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			o := &Object{Obj: obj, Essence: after, Tree: state.DecodeJSON(after), Known: &state.State{Essence: tc.handled}}
			if tc.mem.SpawnHolds == nil {
				tc.mem.SpawnHolds = FreshProcess.SpawnHolds
			}
			d := Decide(o, fin, Selected{Change: tc.change}, tc.mem)
			var ids []string
			for _, e := range d.Entries {
				ids = append(ids, e.Opts.ID)
			}
			if got := fmt.Sprintf("route %d, finalizer %d, %q, resume %v, entries %v", d.Route, d.Finalizer, d.Reason, d.WithResume, ids); got != tc.want {
				t.Errorf("decide: %s\n           want %s", got, tc.want)
			}
		})
	}
}
