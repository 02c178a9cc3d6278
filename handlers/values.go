package handlers

import "github.com/gopf-dev/gopf/internal/spec"

// The values a handler works with beside its object: the patch of its
// changes, the memo, the diff and the indexes. Each is the engine's own
// type (internal/spec) under a name of this package, with the methods a
// handler calls, so that go doc shows them.

// Patch collects changes a handler wants made to its object: Set,
// SetLabel, SetAnnotation and SetStatus, and Transform for what a merge
// patch cannot say (appending to or removing from a list, as Kopf's
// patch.fns). gopf applies the changes of all handlers of one reconcile
// together, as one write to the object and one to its status, after the
// handlers return: JSON merge patches, or JSON patches (RFC 6902) when there
// are transformations. Setting a value to nil removes the field.
//
// A condition appended to status.conditions, and a finalizer removed:
//
//	c.Patch.Transform(func(obj map[string]any) {
//		status, ok := obj["status"].(map[string]any)
//		if !ok {
//			status = map[string]any{}
//			obj["status"] = status
//		}
//		conditions, _ := status["conditions"].([]any)
//		status["conditions"] = append(conditions, map[string]any{"type": "Ready", "status": "True"})
//	})
//	c.Patch.Transform(func(obj map[string]any) {
//		meta := obj["metadata"].(map[string]any)
//		finalizers, _ := meta["finalizers"].([]any)
//		meta["finalizers"] = slices.DeleteFunc(finalizers, func(f any) bool { return f == "example.com/cleanup" })
//	})
type Patch spec.Patch

// Set sets the field at a dotted path, e.g. "spec.replicas",
// "metadata.labels.app" or "status.phase". Paths under status go to the
// status subresource when the kind has one. Keys that contain dots (such as
// label keys) can be set with SetLabel and SetAnnotation.
func (p *Patch) Set(path string, value any) error { return (*spec.Patch)(p).Set(path, value) }

// SetLabel sets (or, with value nil, removes) a label.
func (p *Patch) SetLabel(key string, value *string) { (*spec.Patch)(p).SetLabel(key, value) }

// SetAnnotation sets (or, with value nil, removes) an annotation.
func (p *Patch) SetAnnotation(key string, value *string) {
	(*spec.Patch)(p).SetAnnotation(key, value)
}

// SetStatus sets status.<key>, replacing what is there.
func (p *Patch) SetStatus(key string, value any) { (*spec.Patch)(p).SetStatus(key, value) }

// Transform adds a transformation of the object (Kopf's patch.fns): fn
// receives the object as a JSON-like map (numbers as float64), with the
// Set changes of this reconcile applied, and changes it in place. gopf
// turns the difference into a JSON patch, guarded by a test of the
// object's resourceVersion, and sends it in the same write as the rest of
// the patch: items appended to a list become "add .../-" operations,
// removed items "remove" operations; other changes of a list replace it.
// Transformations run in the order they were added; changes under status
// go to the status subresource when the kind has one. A transformation may
// be called more than once for one write, each time on a fresh copy, so it
// should change only the map it gets. A nil fn is an error.
func (p *Patch) Transform(fn func(obj map[string]any)) error { return (*spec.Patch)(p).Transform(fn) }

// Memo is a per-object scratchpad kept in the operator's memory (never
// stored on the object), with Get, Set and Update: every handler of one
// object sees the same Memo until the object is gone or the operator
// restarts. The operator has one too, for the operator-level handlers,
// with reconcile.Options.Memo as its starting content. An object's memo
// starts as a shallow copy of the operator memo, taken when the object is
// first seen after the startup handlers finished: later changes to the
// operator memo's keys do not reach objects seen before, but a value both
// hold (a map, a channel, a pointer) is the same value. It is safe for
// concurrent use.
type Memo spec.Memo

// Get returns the value stored under key, or nil.
func (m *Memo) Get(key string) any { return (*spec.Memo)(m).Get(key) }

// Set stores value under key.
func (m *Memo) Set(key string, value any) { (*spec.Memo)(m).Set(key, value) }

// Update replaces the value under key with fn's result, atomically.
func (m *Memo) Update(key string, fn func(old any) any) { (*spec.Memo)(m).Update(key, fn) }

// Diff is the list of changes from Cause.Old to Cause.New, sorted by path.
// Maps are compared key by key, so each item names the deepest key whose
// value changed; anything else (lists, strings, numbers) is compared as a
// whole. Paths are relative to Old and New: from the essence's root for
// handlers of whole objects, from the field for handlers narrowed to one.
// An empty Path is the root itself. For a handler of the field "spec":
//
//	spec.replicas 1 → 2:          {DiffChange, [replicas], 1, 2}
//	spec.paused added:            {DiffAdd, [paused], nil, true}
//	spec.selector.app removed:    {DiffRemove, [selector app], "db", nil}
//	spec.ports [80] → [80 443]:   {DiffChange, [ports], [80], [80 443]}
//	spec appears (Old is nil):    {DiffAdd, [], nil, map[...]}    (one item)
//	spec disappears (New is nil): {DiffRemove, [], map[...], nil} (one item)
//
// Create handlers get the root item of the whole essence, as in Kopf:
// {DiffAdd, [], nil, essence}. Resume and delete handlers get an empty Diff,
// so check its length before taking c.Diff[0] (Kopf's diff[0] idiom).
type Diff = spec.Diff

// DiffItem is one change between two essences: the field at Path was added,
// changed or removed; Old is nil for an addition and New for a removal.
type DiffItem = spec.DiffItem

// DiffOp is the kind of one change in a Diff: DiffAdd, DiffChange or
// DiffRemove.
type DiffOp = spec.DiffOp

// The kinds of change in a Diff.
const (
	DiffAdd    = spec.DiffAdd
	DiffChange = spec.DiffChange
	DiffRemove = spec.DiffRemove
)

// Indexes are the operator's indexes, as a handler is given them
// (Cause.Indexes, or Admission's Indexes): read one through the Index that
// OnIndex or OnFlatIndex returned for it.
type Indexes spec.Indexes
