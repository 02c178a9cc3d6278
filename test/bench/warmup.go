//go:build linux

package bench

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

// warmUpObjects is how many objects the warm-up creates.
const warmUpObjects = 50

// warmUp sends the workload's kinds of requests once, with no operator
// running, so that the API server's first-use costs (setting up the
// custom resource's storage and watch cache, for one) do not fall on
// whichever operator runs first.
func (b *bench) warmUp(ctx context.Context) error {
	const ns = "bench-warmup"
	if err := b.createNamespace(ctx, ns); err != nil {
		return err
	}
	load := &loadGenerator{c: b.c, ns: ns, names: objectNames(warmUpObjects), workers: b.opts.Workers}
	status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"warm":{"message":"up"}}}`))
	steps := []func(context.Context) error{
		load.createAll,
		load.updateAll,
		func(ctx context.Context) error {
			return load.each(ctx, func(ctx context.Context, name string) error {
				obj := &kopfv1.KopfExample{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return b.c.Status().Patch(ctx, obj, status)
			})
		},
		load.deleteAll,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return fmt.Errorf("warming up the API server: %w", err)
		}
	}
	return nil
}
