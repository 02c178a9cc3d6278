package gopf

import (
	"context"
	"io"

	"github.com/gopf-dev/gopf/internal/cli"
)

// RunKubectlPlugin runs the commands of the kubectl plugin
// (cmd/kubectl-gopf): `kubectl gopf status KIND[,KIND...] [NAME] [-n NS |
// -A] [-o table|json|yaml]` shows, for the objects of any gopf operator,
// what gopf stored on them — progress records, last-handled state,
// finalizers — without knowing the operator's handlers. The cluster is
// the one of --kubeconfig (or KUBECONFIG) and --context; the namespace
// defaults to the context's, as kubectl's does. It writes nothing to the
// cluster.
func RunKubectlPlugin(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	return cli.RunKubectlPlugin(ctx, stdout, stderr, args)
}
