package spec

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Memo is a per-object scratchpad kept in the operator's memory (never
// stored on the object): every handler of one object sees the same Memo
// until the object is gone or the operator restarts. The zero Memo is empty
// and ready; it is safe for concurrent use.
type Memo struct {
	mu sync.Mutex
	m  map[string]any
}

// Get returns the value stored under key, or nil.
func (m *Memo) Get(key string) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key]
}

// Set stores value under key.
func (m *Memo) Set(key string, value any) {
	m.Update(key, func(any) any { return value })
}

// Update replaces the value under key with fn's result, atomically.
func (m *Memo) Update(key string, fn func(old any) any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]any{}
	}
	m.m[key] = fn(m.m[key])
}

// DiffOp is the kind of one change in a Diff.
type DiffOp string

// The kinds of change.
const (
	DiffAdd    DiffOp = "add"
	DiffChange DiffOp = "change"
	DiffRemove DiffOp = "remove"
)

// DiffItem is one change between two essences: the field at Path was added,
// changed or removed; Old is nil for an addition and New for a removal.
type DiffItem struct {
	Op   DiffOp
	Path []string
	Old  any
	New  any
}

// String renders the item as (op, path, old, new).
func (d DiffItem) String() string {
	return fmt.Sprintf("(%s, %s, %v, %v)", d.Op, strings.Join(d.Path, "."), d.Old, d.New)
}

// Diff is the list of changes between two essences (or two values of a
// field), sorted by path; package handlers documents its shape.
type Diff []DiffItem

// Indexes are the operator's indexes, by name.
type Indexes struct {
	mu sync.RWMutex
	m  map[string]*Index
}

// NewIndexes returns an empty set of indexes.
func NewIndexes() *Indexes { return &Indexes{m: map[string]*Index{}} }

// Get returns the index of that name, or nil if there is none.
func (s *Indexes) Get(name string) *Index {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[name]
}

// AddIndex creates an empty index of that name in s (or returns the
// existing one).
func AddIndex(s *Indexes, name string) *Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix, ok := s.m[name]; ok {
		return ix
	}
	ix := &Index{byKey: map[string]map[string]any{}, byObject: map[string]map[string]any{}}
	s.m[name] = ix
	return ix
}

// Index maps keys to the values objects contributed under them. It is safe
// for concurrent use; an update costs in proportion to the keys of the one
// object it concerns.
type Index struct {
	mu       sync.RWMutex
	byKey    map[string]map[string]any // key → object → value
	byObject map[string]map[string]any // object → key → value
}

// Get returns the values under key, ordered by the objects that contributed
// them (namespace/name), or nil.
func (ix *Index) Get(key string) []any {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	entries := ix.byKey[key]
	if len(entries) == 0 {
		return nil
	}
	objects := make([]string, 0, len(entries))
	for o := range entries {
		objects = append(objects, o)
	}
	sort.Strings(objects)
	out := make([]any, len(objects))
	for i, o := range objects {
		out[i] = entries[o]
	}
	return out
}

// Keys returns the keys that have values, sorted.
func (ix *Index) Keys() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	keys := make([]string, 0, len(ix.byKey))
	for k := range ix.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Len returns the number of keys that have values.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.byKey)
}

// SetEntries replaces what one object (namespace/name) contributes to ix;
// no entries removes its contribution.
func SetEntries(ix *Index, object string, entries map[string]any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k := range ix.byObject[object] {
		delete(ix.byKey[k], object)
		if len(ix.byKey[k]) == 0 {
			delete(ix.byKey, k)
		}
	}
	delete(ix.byObject, object)
	if len(entries) == 0 {
		return
	}
	own := make(map[string]any, len(entries))
	for k, v := range entries {
		own[k] = v
		if ix.byKey[k] == nil {
			ix.byKey[k] = map[string]any{}
		}
		ix.byKey[k][object] = v
	}
	ix.byObject[object] = own
}
