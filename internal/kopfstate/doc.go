// Package kopfstate reads and writes the state a Kopf operator keeps on
// objects: its last-handled configuration, its per-handler progress
// records and its annotation keys (Store), so that gopf can take over from
// Kopf, hand back to it, or keep its own state in Kopf's format
// (StorageKopf). Fallback is gopf's storage as the engine uses it: gopf's
// place first, then gopf's other place, then Kopf's. The package builds on
// internal/state and knows nothing of the engine.
package kopfstate
