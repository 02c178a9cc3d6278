// Package plan is what `status` and `plan` show: for each object of the
// operator's kinds, where each handler stands (from the stored state) and
// what the operator would do with it on start (Planner). It renders the
// engine's own decision (engine's Decide) without acting on it, reading
// objects and Events through a client and writing nothing. StatusPrinter
// prints the result as a table, JSON or YAML.
package plan
