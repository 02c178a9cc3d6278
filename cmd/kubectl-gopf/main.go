// Command kubectl-gopf is a kubectl plugin that shows what gopf operators
// stored on their objects: where each handler stands (done, retrying with
// its next attempt and last error, failed for good), the last-handled
// state and the finalizers that hold an object and why. It needs only a
// kubeconfig, not the operator's code:
//
//	kubectl gopf status kopfexamples -A
//	kubectl gopf status kopfexamples.kopf.dev my-object -n default -o yaml
//
// Install it with `go install github.com/gopf-dev/gopf/cmd/kubectl-gopf@latest`
// (or `make install-kubectl-plugin`); kubectl finds it on PATH. An operator binary
// answers the same question with its handlers at hand: `<operator> status`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gopf-dev/gopf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := gopf.RunKubectlPlugin(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "kubectl gopf:", err)
		os.Exit(1)
	}
}
