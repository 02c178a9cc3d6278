// Package state holds what gopf keeps on each object between reconciles and
// how it keeps it: the per-handler progress records (State, Progress), the
// essence of an object (what handlers care about, compared to find
// changes), the diff of two essences, and gopf's two storages, status
// (StatusStorage) and annotations (AnnotationStorage), behind the Storage
// interface. Kopf's format lives in internal/kopfstate, which builds on
// this package; the engine builds on both. Nothing here knows the engine.
package state
