/*
Package spec is the contract between gopf's registration API (package
handlers) and its engines (packages reconcile and webhook).

Package handlers turns each registration into a Handler: its kind, its
resolved options, and a function that calls the user's code with a Call (the
engine's side of a handler call). The engines read Handlers from a Registry
through SetOf and never see the user's generic types. Nothing here is
reachable by gopf's users: what a handler author sees is package handlers,
which builds its Cause, Daemon and Admission values from the Call, DaemonControl
and Review the engine hands over.

Values both sides share — Patch, Memo, Diff, Filter, Indexes — are defined
here and re-exported by package handlers under the same names. Their
engine-only operations are functions of this package, not methods, so that
they stay out of the public API.

This package depends on no other gopf package.
*/
package spec
