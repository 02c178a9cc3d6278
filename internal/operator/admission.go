package operator

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/gopf-dev/gopf/internal/assign"
	"github.com/gopf-dev/gopf/internal/shard"
	"github.com/gopf-dev/gopf/internal/spec"
)

// offerShardAtCreate lets gopf's admission webhook label new objects of
// the ring's kinds with their shard (spec.CreateShard), as the embedded
// assigner would label them: by assign.ShardFor over the ring of the
// shards available at that moment, which a View of the ring's Leases
// tells, and only in the namespaces the assigner lists (all when
// namespaces is empty). The webhook server runs the View while it serves;
// an object it did not label is labelled by the assigner's next pass.
func offerShardAtCreate(op *spec.Operator, leases coordinationv1client.LeasesGetter, s *shard.Sharding, kinds []assign.Kind, namespaces []string) error {
	view, err := assign.NewView(leases, s.Namespace, s.Ring)
	if err != nil {
		return err
	}
	gvks := make([]schema.GroupVersionKind, len(kinds))
	for i, k := range kinds {
		gvks[i] = k.GroupKind.WithVersion(k.Resource.Version)
	}
	op.SetCreateShard(&spec.CreateShard{
		Label: shard.ShardLabel(s.Ring),
		Kinds: gvks,
		ShardFor: func(gk schema.GroupKind, obj metav1.Object) string {
			if ns := obj.GetNamespace(); ns != "" && len(namespaces) > 0 && !slices.Contains(namespaces, ns) {
				return ""
			}
			name, _ := assign.ShardFor(view.Ring(time.Now()), kinds, gk, obj)
			return name
		},
		Watch: view.Start,
	})
	return nil
}
