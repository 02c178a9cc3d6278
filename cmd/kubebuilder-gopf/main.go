// Command kubebuilder-gopf is gopf's kubebuilder plugin, gopf/v1-alpha: it
// makes kubebuilder scaffold gopf operators, with Kopf-style handlers where
// go/v4 scaffolds empty Reconcilers and controller-runtime webhooks.
//
//	kubebuilder init --plugins go/v4,gopf/v1-alpha --domain example.com --repo example.com/demo
//	kubebuilder create api --group db --version v1 --kind Database --resource --controller
//	kubebuilder create webhook --group db --version v1 --kind Database --defaulting --programmatic-validation
//
// Kubebuilder runs it as an external plugin: it finds the executable at
// <plugins>/gopf/v1-alpha/gopf, where <plugins> is $EXTERNAL_PLUGINS_PATH or
// kubebuilder/plugins in the user's configuration folder ("make
// install-plugin" puts it there), writes one JSON request to its stdin and
// reads one JSON response from its stdout. The request carries every file of
// the project; the plugin streams through it, keeping the few it edits, and
// answers with the files it writes. Notes for the user go to stderr, which
// kubebuilder shows.
//
// docs/kubebuilder.md in gopf's repository explains what each command
// scaffolds.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/scaffold"
)

// checkout is the gopf checkout the plugin was built from, set by
// "make install-plugin" with -ldflags "-X main.checkout=<folder>". Projects
// scaffolded by such a build depend on that checkout (a replace directive)
// unless --gopf-version or --gopf-replace says otherwise.
var checkout string

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr, scaffold.Options{
		Getenv:       os.Getenv,
		BuildVersion: buildVersion(),
		Checkout:     checkout,
		Notes:        os.Stderr,
	}))
}

// run answers the request on stdin on stdout. Failures are answered with
// error: true and messages, as kubebuilder expects, so run returns non-zero
// only when it cannot write the answer.
func run(stdin io.Reader, stdout, stderr io.Writer, opts scaffold.Options) int {
	var resp protocol.Response
	req, err := protocol.Decode(stdin, scaffold.Keep)
	if err != nil {
		resp = protocol.Errorf(nil, fmt.Sprintf("%s could not read kubebuilder's request: %v", scaffold.PluginKey, err))
	} else {
		resp = scaffold.Handle(req, opts)
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "%s: writing the response: %v\n", scaffold.PluginKey, err)
		return 1
	}
	return 0
}

// buildVersion is the module version the binary was built from: a release
// or pseudo-version for go install ...@version, "(devel)" or "" otherwise.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return info.Main.Version
}
