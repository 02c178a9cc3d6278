package gopf

// ClientConfig lets the external tests see the client configuration that
// NewManager builds.
var ClientConfig = clientConfig
