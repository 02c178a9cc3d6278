package patch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Transformed is the object as a patch leaves it when the patch has
// transformations (Patch.Transform): raw, as decoded JSON, with the patch's
// merge changes applied and then its transformations, in order. It returns
// nil when the patch has none: then the write is a merge patch as ever.
func (s *Sender) Transformed(raw map[string]any, p *spec.Patch) (map[string]any, error) {
	fns := spec.Transforms(p)
	if len(fns) == 0 {
		return nil, nil
	}
	base, err := state.AsJSON(raw)
	if err != nil {
		return nil, err
	}
	merge := map[string]any{}
	for key, v := range spec.ObjectPatch(p) {
		merge[key] = v
	}
	if status := spec.StatusPatch(p); len(status) > 0 {
		merge = state.MergeInto(merge, map[string]any{"status": status})
	}
	changes, err := state.AsJSON(merge)
	if err != nil {
		return nil, err
	}
	obj := state.ApplyMergePatch(base.(map[string]any), changes.(map[string]any))
	for i, fn := range fns {
		if err := state.RunTransform(fn, obj); err != nil {
			return nil, fmt.Errorf("transformation %d of the patch of a %s: %w", i+1, s.gvk.Kind, err)
		}
	}
	return obj, nil
}

// SendPart sends one part of a write: body, the merge patch of the object
// (status false) or of its status (status true; body is {"status": ...}).
// With final (what Transformed returned: body's changes are in it) it sends
// a JSON patch from raw to final for that part instead, guarded by a test of
// obj's resourceVersion; nothing when the part did not change. whole is
// as for SendAs.
func (s *Sender) SendPart(ctx context.Context, obj client.Object, raw, final, body map[string]any, status, whole bool) error {
	if final == nil {
		return s.Send(ctx, obj, body, status, whole)
	}
	base, err := state.AsJSON(raw)
	if err != nil {
		return err
	}
	var ops []map[string]any
	if status {
		ops = state.JSONPatchOps(ops, "/status", base.(map[string]any)["status"], final["status"])
	} else {
		from, to := base.(map[string]any), final
		if s.hasStatus {
			from, to = state.Without(from, "status"), state.Without(to, "status")
		}
		ops = state.JSONPatchOps(ops, "", from, to)
	}
	if len(ops) == 0 {
		return nil
	}
	ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()}}, ops...)
	return s.SendAs(ctx, obj, types.JSONPatchType, ops, status, whole)
}
