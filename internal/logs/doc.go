// Package logs holds the engine's logging helpers: the bridge that posts a
// handler's log lines as Events (Bridge, as reconcile.Options.LogEvents
// says), the recorder of gopf's Events (Recorder), and loggers that add
// their values only when they first write (WithValuesLazily), which keeps
// the quiet reconcile path free of allocations.
package logs
