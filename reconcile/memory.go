package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/internal/spec"
)

// memory is what the engine remembers about one object in this process.
type memory struct {
	uid       types.UID
	written   *state // the state of gopf's last write, until the cache shows it
	writtenAt time.Time
	unsaved   *unsaved // state and results a failed write did not store
	resumed   bool     // resume handlers are done (or do not apply) in this process
	warned    bool     // a Warning Event about bad stored state was posted
	tooLarge  bool     // a Warning Event about a write refused as too large was posted
	memo      spec.Memo
}

// consistencyWait returns how long to wait for the cache to show gopf's last
// write, or 0 if it shows it (or waiting longer makes no sense).
func (m *memory) consistencyWait(s storage, obj map[string]any, timeout time.Duration) time.Duration {
	if m.written == nil {
		return 0
	}
	if saved(s, obj, m.written) {
		m.written = nil
		return 0
	}
	if left := timeout - time.Since(m.writtenAt); left > 0 {
		return left
	}
	m.written = nil
	return 0
}

func (m *memory) wrote(st *state) {
	m.written, m.writtenAt = st, time.Now()
}

// unsaved is what a reconcile meant to write when its write failed.
type unsaved struct {
	st      *state
	results map[string]any
}

// memories holds the memory of every object seen. An object's memory is used
// only by the one reconcile that handles the object at a time.
type memories struct {
	mu       sync.Mutex
	m        map[types.NamespacedName]*memory
	defaults map[string]any
}

// newMemories returns an empty set; every object's memo starts as a shallow
// copy of defaults.
func newMemories(defaults map[string]any) *memories {
	return &memories{m: map[types.NamespacedName]*memory{}, defaults: defaults}
}

// get returns the memory of the object, new if the object is new or was
// replaced by another of the same name.
func (ms *memories) get(key types.NamespacedName, uid types.UID) *memory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.m[key]
	if !ok || m.uid != uid {
		m = &memory{uid: uid}
		for k, v := range ms.defaults {
			m.memo.Set(k, v)
		}
		ms.m[key] = m
	}
	return m
}

func (ms *memories) forget(key types.NamespacedName) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, key)
}
