// Package protocol is the wire format of kubebuilder's external plugins, as
// kubebuilder v4 speaks it: one JSON request on the plugin's stdin, one JSON
// response on its stdout.
//
// The kubebuilder module is not available from the Go module proxy, so the
// types here are written from the protocol's description rather than
// imported. Requests are decoded by Decode, which streams: a request carries
// every file of the user's project (binaries included), so it can weigh
// hundreds of megabytes, and the plugin needs only a handful of those files.
package protocol

import "encoding/json"

// APIVersion is the protocol version kubebuilder sends and expects back.
const APIVersion = "v1alpha1"

// The commands kubebuilder sends. The first four scaffold; Flags and
// Metadata ask for the plugin's flags and help text of a subcommand, named
// by the request's only argument (see the Subcommand constants).
const (
	CommandInit          = "init"
	CommandCreateAPI     = "create api"
	CommandCreateWebhook = "create webhook"
	CommandEdit          = "edit"
	CommandFlags         = "flags"
	CommandMetadata      = "metadata"
)

// The arguments of the flags and metadata commands, naming the subcommand
// they are about.
const (
	SubcommandInit    = "--init"
	SubcommandAPI     = "--api"
	SubcommandWebhook = "--webhook"
	SubcommandEdit    = "--edit"
)

// Request is what kubebuilder sends. Only the universe entries the decoder
// was asked to keep are in Universe; the others are counted in Skipped.
type Request struct {
	// APIVersion is the protocol version, "v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Command is one of the Command constants.
	Command string `json:"command"`
	// Args are the user's command-line flags, as "--name value" pairs or
	// "--name=value" tokens, without --plugins.
	Args []string `json:"args"`
	// PluginChain lists the resolved plugin keys of the command (kubebuilder
	// 4.10 and later), e.g. ["go.kubebuilder.io/v4", "gopf/v1-alpha"].
	PluginChain []string `json:"pluginChain,omitempty"`
	// Config is the PROJECT file as JSON (kubebuilder 4.10 and later); nil
	// when kubebuilder did not send it.
	Config *Config `json:"config,omitempty"`
	// Universe maps paths relative to the project folder to file contents.
	Universe map[string]string `json:"universe"`

	// Present holds every path the request's universe named, kept or not.
	Present map[string]bool `json:"-"`
	// Skipped counts universe entries that were not kept, and SkippedBytes
	// their encoded size.
	Skipped      int   `json:"-"`
	SkippedBytes int64 `json:"-"`
}

// Config is the part of the PROJECT file the plugin reads.
type Config struct {
	Domain      string          `json:"domain,omitempty"`
	Repo        string          `json:"repo,omitempty"`
	ProjectName string          `json:"projectName,omitempty"`
	MultiGroup  bool            `json:"multigroup,omitempty"`
	Layout      json.RawMessage `json:"layout,omitempty"`
	Resources   []Resource      `json:"resources,omitempty"`
}

// Resource is one entry of the PROJECT file's resources.
type Resource struct {
	Group      string    `json:"group,omitempty"`
	Version    string    `json:"version,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Domain     string    `json:"domain,omitempty"`
	Plural     string    `json:"plural,omitempty"`
	Path       string    `json:"path,omitempty"`
	API        *API      `json:"api,omitempty"`
	Controller bool      `json:"controller,omitempty"`
	Webhooks   *Webhooks `json:"webhooks,omitempty"`
	External   bool      `json:"external,omitempty"`
	Core       bool      `json:"core,omitempty"`
}

// API describes a resource's CRD.
type API struct {
	CRDVersion string `json:"crdVersion,omitempty"`
	Namespaced bool   `json:"namespaced,omitempty"`
}

// Webhooks are the webhooks scaffolded for a resource.
type Webhooks struct {
	WebhookVersion string `json:"webhookVersion,omitempty"`
	Defaulting     bool   `json:"defaulting,omitempty"`
	Validation     bool   `json:"validation,omitempty"`
	Conversion     bool   `json:"conversion,omitempty"`
}

// Response is what the plugin answers. Kubebuilder writes every Universe
// entry relative to the project folder (it never deletes files), fails the
// command when Error is set, printing ErrorMsgs, and uses Flags and
// Metadata for the flags and metadata commands.
type Response struct {
	APIVersion string            `json:"apiVersion"`
	Command    string            `json:"command"`
	Metadata   Metadata          `json:"metadata"`
	Universe   map[string]string `json:"universe"`
	Error      bool              `json:"error,omitempty"`
	ErrorMsgs  []string          `json:"errorMsgs,omitempty"`
	Flags      []Flag            `json:"flags,omitempty"`
}

// Metadata is a subcommand's help text. Kubebuilder decodes it into a struct
// without JSON tags, which matches field names in any case.
type Metadata struct {
	Description string `json:"description,omitempty"`
	Examples    string `json:"examples,omitempty"`
}

// Flag is a flag the plugin adds to a subcommand. Type is "string", "bool",
// "int" or "float"; Default is the default value as a string.
type Flag struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default"`
	Usage   string `json:"usage"`
}

// Errorf returns a failed response for req with one message per entry.
func Errorf(req *Request, msgs ...string) Response {
	resp := NewResponse(req)
	resp.Error = true
	resp.ErrorMsgs = msgs
	return resp
}

// NewResponse returns an empty, successful response to req (which may be
// nil when the request could not be read).
func NewResponse(req *Request) Response {
	resp := Response{APIVersion: APIVersion, Universe: map[string]string{}}
	if req != nil {
		resp.Command = req.Command
	}
	return resp
}
