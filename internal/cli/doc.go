/*
Package cli is the command line of gopf.Main: the operator's flags
(kubebuilder's cmd/main.go ones plus Kopf's), the commands freeze, resume,
status and plan, --print-rbac and --check-rbac, and the kubectl plugin's
status command.

Run parses the command line and runs what it names. Building the
operator's manager is package gopf's (gopf.NewManager), which this package
cannot import: Program.NewManager does it, given the parsed Flags, whose
exported fields are the manager's options.
*/
package cli
