package gopf

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusCommand lets the external tests run the status and plan commands
// against a control plane of their own.
var StatusCommand = statusCommand

// FreezeCommand lets the external tests run the freeze and resume commands
// against a control plane of their own.
func FreezeCommand(ctx context.Context, c client.Client, command string, args ...string) error {
	fc, err := parseFreeze("op", command, args)
	if err != nil {
		return err
	}
	return fc.do(ctx, c)
}
