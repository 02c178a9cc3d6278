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

// SeedMemo gives dst every key of src that dst does not have, with src's
// value: a shallow copy that keeps what dst holds already.
func SeedMemo(dst, src *Memo) {
	src.mu.Lock()
	snapshot := make(map[string]any, len(src.m))
	for k, v := range src.m {
		snapshot[k] = v
	}
	src.mu.Unlock()
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if dst.m == nil {
		dst.m = make(map[string]any, len(snapshot))
	}
	for k, v := range snapshot {
		if _, ok := dst.m[k]; !ok {
			dst.m[k] = v
		}
	}
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
	ix := &Index{byKey: map[any]map[string]any{}, byObject: map[string][]any{}}
	s.m[name] = ix
	return ix
}

// Index maps keys to the values objects contributed under them. Keys are
// of any comparable type; a flat index has the one key nil. It is safe for
// concurrent use; an update costs in proportion to the keys of the one
// object it concerns.
type Index struct {
	mu       sync.RWMutex
	byKey    map[any]map[string]any // key → object → value
	byObject map[string][]any       // object → its keys
}

// Get returns the values under key, ordered by the objects that contributed
// them (namespace/name), or nil. The key must be of the type the index
// function used: the int 1 is not the int64 1.
func (ix *Index) Get(key any) []any {
	if ix == nil {
		return nil
	}
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

// Keys returns the keys that have values, sorted by how fmt prints them
// (%v), and by type where two print alike; string keys sort as strings.
func (ix *Index) Keys() []any {
	if ix == nil {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	keys := make([]any, 0, len(ix.byKey))
	for k := range ix.byKey {
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys
}

// sortKeys sorts index keys as Index.Keys returns them.
func sortKeys(keys []any) {
	printed := make(map[any]string, len(keys))
	for _, k := range keys {
		printed[k] = fmt.Sprintf("%v\x00%T", k, k)
	}
	sort.Slice(keys, func(i, j int) bool { return printed[keys[i]] < printed[keys[j]] })
}

// SetEntries replaces what one object (namespace/name) contributes to ix;
// no entries removes its contribution. The keys come from a Go map, so they
// are comparable.
func SetEntries(ix *Index, object string, entries map[any]any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, k := range ix.byObject[object] {
		delete(ix.byKey[k], object)
		if len(ix.byKey[k]) == 0 {
			delete(ix.byKey, k)
		}
	}
	delete(ix.byObject, object)
	if len(entries) == 0 {
		return
	}
	own := make([]any, 0, len(entries))
	for k, v := range entries {
		own = append(own, k)
		if ix.byKey[k] == nil {
			ix.byKey[k] = map[string]any{}
		}
		ix.byKey[k][object] = v
	}
	ix.byObject[object] = own
}
