// Package scenario is what the benchmark's operators and its load
// generator agree on: which kind a run is on (Kind), how many handlers it
// has, the status keys or annotations their results go to, the values they
// write, and how the load generator tells that an object has been handled.
//
// The operators read the handler count and the kind from the environment
// (EnvHandlers, EnvKind)
// rather than from flags, because the gopf operator's flags belong to
// gopf.Main.
package scenario
