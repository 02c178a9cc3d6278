/*
Package spec is the contract between gopf's registration API (package
handlers) and its engines (packages reconcile and webhook).

Package handlers turns each registration into a Handler: its kind, its
resolved options, and a function that calls the user's code. The engines
read the Handlers of a registry through SetOf and call them with the
context package handlers defines (its Cause, the type parameter C here),
which they build themselves; what such a context carries for the engine
only — how to post Events, the sub-handlers a call registered — is in
Extras, which the context keeps unexported and the registry's Set binds.
Admission handlers get an AdmissionCall instead, which package handlers
turns into the handler's typed Admission, and which carries the warnings
back. Nothing here is reachable by gopf's users.

Values both sides share — Patch, Memo, Diff, Filter, Indexes — are defined
here and re-exported by package handlers under the same names. Their
engine-only operations are functions of this package, not methods, so that
they stay out of the public API.

This package depends on no other gopf package.
*/
package spec
