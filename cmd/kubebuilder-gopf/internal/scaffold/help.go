package scaffold

import (
	"fmt"
	"strings"

	"github.com/gopf-dev/gopf/cmd/kubebuilder-gopf/internal/protocol"
)

// dependencyFlags choose the gopf the project depends on; init and edit
// take them.
var dependencyFlags = []protocol.Flag{
	{
		Name: "gopf-version", Type: "string", Default: "",
		Usage: "the gopf release the project requires, e.g. v0.3.0 (default: the version this plugin was built from; env GOPF_VERSION)",
	},
	{
		Name: "gopf-replace", Type: "string", Default: "",
		Usage: "a folder holding a gopf checkout, for a replace directive in go.mod: for developing against a local gopf " +
			"(default: the checkout \"make install-plugin\" built this plugin from, if any; env GOPF_REPLACE)",
	},
}

// subcommandHelp is the help text of each subcommand, by the argument of
// the flags and metadata commands.
var subcommandHelp = map[string]struct {
	flags    []protocol.Flag
	metadata protocol.Metadata
}{
	protocol.SubcommandInit: {
		flags: dependencyFlags,
		metadata: protocol.Metadata{
			Description: `Make the new project a gopf operator: Kopf-style handlers (on create, update,
delete, timers, daemons, admission) on the manager kubebuilder's go/v4 plugin
scaffolds. Run it after go/v4, in the same command.

gopf/v1-alpha
  - adds github.com/gopf-dev/gopf to go.mod (--gopf-version, --gopf-replace);
  - sets a gopf registry up on the manager in cmd/main.go, which keeps its
    flags and options, with registerHandlers and registerWebhooks functions
    that "create api" and "create webhook" fill in;
  - makes "make test" find kube-apiserver and etcd for envtest even without
    access to the envtest downloads: hack/setup-envtest.sh builds them from
    the Go module proxy when the download fails (make envtest-assets).
`,
			Examples: `  # A new gopf operator (go/v4 first, gopf second):
  kubebuilder init --plugins go/v4,gopf/v1-alpha --domain example.com --repo example.com/demo

  # Against a local gopf checkout:
  kubebuilder init --plugins go/v4,gopf/v1-alpha --domain example.com --repo example.com/demo \
    --gopf-replace ../gopf

  # Then, for each kind:
  kubebuilder create api --group db --version v1 --kind Database --resource --controller
`,
		},
	},
	protocol.SubcommandAPI: {
		metadata: protocol.Metadata{
			Description: `Scaffold gopf handlers for the kind instead of an empty Reconciler.

After go/v4 has scaffolded the API and its controller, gopf/v1-alpha replaces
internal/controller/<kind>_controller.go with handlers: on create, on update,
on delete (gopf holds the object with a finalizer until it succeeds) and a
level-based reconcile, with the RBAC markers gopf needs. cmd/main.go
registers them in registerHandlers, and <kind>_controller_test.go tests them
with envtest: an operator in the test process against a real API server.
Without a controller (--controller=false) there is nothing to do.
`,
			Examples: `  # A kind of the project, with handlers:
  kubebuilder create api --group db --version v1 --kind Database --resource --controller

  # Handlers for a built-in kind:
  kubebuilder create api --group apps --version v1 --kind Deployment --resource=false --controller
`,
		},
	},
	protocol.SubcommandWebhook: {
		metadata: protocol.Metadata{
			Description: `Scaffold gopf admission handlers for the kind instead of controller-runtime's
defaulter and validator.

--defaulting gives a mutating handler (handlers.OnMutate: change the object,
gopf sends the difference), --programmatic-validation a validating one
(handlers.OnValidate: return handlers.Deny(code, message) to reject).
cmd/main.go registers them in registerWebhooks; the webhook markers point
config/webhook at the paths gopf serves them on, and the envtest suite
reaches them through a real API server. Conversion webhooks are not
gopf's: scaffold them with --plugins go/v4.
`,
			Examples: `  kubebuilder create webhook --group db --version v1 --kind Database --defaulting --programmatic-validation
`,
		},
	},
	protocol.SubcommandEdit: {
		flags: dependencyFlags,
		metadata: protocol.Metadata{
			Description: `Add gopf to an existing go/v4 project, or change the gopf it depends on.

Like init, but on a project that may already have Reconcilers, which stay:
go.mod requires gopf, cmd/main.go gets a gopf registry next to them, and the
Makefile provides envtest's control plane through hack/setup-envtest.sh.
Running it again with --gopf-version or --gopf-replace only updates go.mod.
`,
			Examples: `  kubebuilder edit --plugins gopf/v1-alpha
  kubebuilder edit --plugins gopf/v1-alpha --gopf-replace ../gopf
  kubebuilder edit --plugins gopf/v1-alpha --gopf-version v0.3.0
`,
		},
	},
}

// subcommandOf returns the subcommand a flags or metadata request is about.
func subcommandOf(req *protocol.Request) (string, error) {
	for _, a := range req.Args {
		if _, ok := subcommandHelp[a]; ok {
			return a, nil
		}
	}
	return "", fmt.Errorf("%s %s: want one of %s, %s, %s or %s as the argument, got %q", PluginKey, req.Command,
		protocol.SubcommandInit, protocol.SubcommandAPI, protocol.SubcommandWebhook, protocol.SubcommandEdit, strings.Join(req.Args, " "))
}

func flagsResponse(req *protocol.Request) protocol.Response {
	sub, err := subcommandOf(req)
	if err != nil {
		return protocol.Errorf(req, err.Error())
	}
	resp := protocol.NewResponse(req)
	resp.Flags = append([]protocol.Flag{}, subcommandHelp[sub].flags...)
	return resp
}

func metadataResponse(req *protocol.Request) protocol.Response {
	sub, err := subcommandOf(req)
	if err != nil {
		return protocol.Errorf(req, err.Error())
	}
	resp := protocol.NewResponse(req)
	resp.Metadata = subcommandHelp[sub].metadata
	return resp
}
