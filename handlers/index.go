package handlers

import (
	"sort"
	"sync"
)

// Indexes are the operator's indexes, by name.
type Indexes struct {
	mu sync.RWMutex
	m  map[string]*Index
}

// NewIndexes returns an empty set; gopf's engine creates and fills it.
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

// Add creates an empty index of that name (or returns the existing one).
func (s *Indexes) Add(name string) *Index {
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

// Set replaces what one object (namespace/name) contributes.
func (ix *Index) Set(object string, entries map[string]any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(object)
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

// Remove drops what one object contributes.
func (ix *Index) Remove(object string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(object)
}

func (ix *Index) removeLocked(object string) {
	for k := range ix.byObject[object] {
		delete(ix.byKey[k], object)
		if len(ix.byKey[k]) == 0 {
			delete(ix.byKey, k)
		}
	}
	delete(ix.byObject, object)
}
