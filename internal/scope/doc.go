// Package scope decides which namespaces an operator serves from Kopf-style
// patterns (plain names, globs, negations; Scope) and what a manager's cache
// must watch for them (CacheNamespaces). The engine, peering, the
// command line and the manager share it.
package scope
