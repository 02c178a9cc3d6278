package cli

import (
	"context"
	"io"

	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusCommand lets the external tests run the status and plan commands
// against a control plane of their own.
func StatusCommand(ctx context.Context, stdout, stderr io.Writer, cfg *rest.Config, p Program, command string, args []string) error {
	return statusCommand(ctx, stdout, stderr, func() (*rest.Config, error) { return cfg, nil }, p, command, args)
}

// FreezeCommand lets the external tests run the freeze and resume commands
// against a control plane of their own.
func FreezeCommand(ctx context.Context, c client.Client, command string, args ...string) error {
	fc, err := parseFreeze("op", command, args)
	if err != nil {
		return err
	}
	return fc.do(ctx, c)
}
