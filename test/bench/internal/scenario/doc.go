// Package scenario is what the benchmark's two operators and its load
// generator agree on: how many handlers a run has, the status keys their
// results go to, the values they write, and how the load generator tells
// that an object has been handled.
//
// Both operators read the handler count from the environment (EnvHandlers)
// rather than from flags, because the gopf operator's flags belong to
// gopf.Main.
package scenario
