package assign

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ResumeAnnotation, on the assigner's Lease, tells where the rescue of the
// objects of shards that are not available got to (see mark): the next
// leader goes on from there. A leader that starts at the top of the list
// again, as each did before, moves the same first objects again and
// again while replicas keep dying (half of those it moves go to the
// replica killed next), and the objects at the end of the list wait for
// the crash loop to stop: in the sharded bench's chaos run, every object
// named kex-00000 to kex-03999 had its update handled before one of
// kex-05000 to kex-09999 had.
const ResumeAnnotation = "gopf.dev/assigner-resume"

// mark is a place in the order of the ring's objects: a kind (its index
// in Options.Kinds) and an object's key, namespace/name, as the API server
// lists them. The zero mark, of kind -1, comes before every object.
type mark struct {
	kind int
	key  string
}

// start is the mark before every object.
var start = mark{kind: -1}

// before reports whether m comes before o.
func (m mark) before(o mark) bool { return m.kind < o.kind || m.kind == o.kind && m.key < o.key }

// markOf returns the place of obj, of the kind at index kind.
func markOf(kind int, obj metav1.Object) mark {
	return mark{kind: kind, key: obj.GetNamespace() + "/" + obj.GetName()}
}

// format writes m for ResumeAnnotation: the kind's resource, a space and
// the key.
func (a *Assigner) format(m mark) string {
	if m.kind < 0 {
		return ""
	}
	return a.opts.Kinds[m.kind].Resource.GroupResource().String() + " " + m.key
}

// parse reads a mark that format wrote: start for a kind that is no
// longer the ring's, or anything else it cannot read.
func (a *Assigner) parse(s string) mark {
	resource, key, ok := strings.Cut(s, " ")
	i := slices.IndexFunc(a.opts.Kinds, func(k Kind) bool { return k.Resource.GroupResource().String() == resource })
	if !ok || i < 0 {
		return start
	}
	return mark{kind: i, key: key}
}

// loadMark returns where the last leader's rescue got to, from the
// assigner's Lease, or start.
func (a *Assigner) loadMark(ctx context.Context, log logr.Logger) mark {
	l, err := a.opts.Leases.Leases(a.opts.Namespace).Get(ctx, a.opts.Ring+"-assigner", metav1.GetOptions{})
	if err != nil {
		log.V(1).Info("reading where the last rescue got to: starting at the top", "error", err.Error())
		return start
	}
	return a.parse(l.Annotations[ResumeAnnotation])
}

// saveMark writes m into the assigner's Lease, for the next leader. A
// merge patch of an annotation: the elector's next renewal, which writes
// the Lease it last read, conflicts and reads it again, and so keeps it.
func (a *Assigner) saveMark(ctx context.Context, log logr.Logger, m mark) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ResumeAnnotation: a.format(m)}}})
	if err == nil {
		_, err = a.opts.Leases.Leases(a.opts.Namespace).Patch(ctx, a.opts.Ring+"-assigner", types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil && ctx.Err() == nil {
		log.V(1).Info("writing where the rescue got to", "error", err.Error())
	}
}
