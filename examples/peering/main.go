// Command peering shows Kopf's peering, as its 06-peering example does: run
// this operator several times with the same --peering name and different
// --priority values, and only the live one with the highest priority
// handles objects; the others pause, and take over when it goes.
//
//	peering --peering=example --priority=100   # works
//	peering --peering=example                   # pauses (priority 0)
//	peering --peering=example --dev             # priority 666: pauses both
//
// The peering object (a ClusterKopfPeering named like the peering, or a
// KopfPeering with --peering-namespace) must exist: samples/ has one.
// `peering freeze --peering=example --lifetime=10m` pauses all of them for a
// while; `peering resume --peering=example` ends that.
//
// The create handler records which operator handled the object: POD_ID,
// else the host name.
package main

import (
	"context"
	"os"

	"github.com/gopf-dev/gopf"
	kopfv1 "github.com/gopf-dev/gopf/api/v1"
	"github.com/gopf-dev/gopf/handlers"
)

// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=kopfexamples/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kopf.dev,resources=clusterkopfpeerings;kopfpeerings,verbs=get;list;watch;patch

func main() {
	who := os.Getenv("POD_ID")
	if who == "" {
		who, _ = os.Hostname()
	}
	gopf.Main(registry(who), kopfv1.AddToScheme)
}

// registry registers the create handler of the operator named who.
func registry(who string) *handlers.Registry {
	reg := handlers.NewRegistry()
	handlers.OnCreate(reg, func(ctx context.Context, obj *kopfv1.KopfExample, c *handlers.Cause) (any, error) {
		return map[string]any{"handledBy": who}, nil
	})
	return reg
}
