package gopf

// StatusCommand lets the external tests run the status and plan commands
// against a control plane of their own.
var StatusCommand = statusCommand
