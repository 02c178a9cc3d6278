package memory

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gopf-dev/gopf/internal/gate"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Memory is what the engine remembers about one object in this process.
type Memory struct {
	uid       types.UID
	written   *state.State // the state of gopf's last write, until the cache shows it
	writtenAt time.Time
	showing   string   // the essence the object shows after that write, if the state records it
	Unsaved   *Unsaved // state and results a failed write (or a write put off) did not store
	Resumed   bool     // resume handlers are done (or do not apply) in this process
	// Released says gopf removed its finalizer from the object, being
	// deleted: no finalizer can be added to it since, so a view of it that
	// still holds one is the cache's, behind.
	Released bool
	// Held says the object holds a finalizer gopf answers for, as far as
	// gopf knows: it was seen or put there and gopf did not remove it.
	Held     bool
	Warned   bool // a Warning Event about bad stored state was posted
	TooLarge bool // a Warning Event about a write refused as too large was posted
	Memo     spec.Memo
	seeded   bool // memo has the operator memo's keys
}

// ConsistencyWait returns how long to wait for the cache to show gopf's last
// write, or 0 if it shows it (or waiting longer makes no sense). A write
// can be two requests (status, then the object); when the written state
// says a cause is done with the object as the handlers patched it, the
// cache shows the write once it shows both that state and that essence
// (essence is the object's current one), so that the handlers' own patch
// is never taken for a change.
func (m *Memory) ConsistencyWait(s state.Storage, obj map[string]any, essence string, timeout time.Duration) time.Duration {
	if m.written == nil {
		return 0
	}
	done := m.showing != "" && len(m.written.Progress) == 0 && !state.IsCompact(m.showing)
	if state.Saved(s, obj, m.written) && (!done || m.showing == essence) {
		m.written = nil
		return 0
	}
	if left := timeout - time.Since(m.writtenAt); left > 0 {
		return left
	}
	m.written = nil
	return 0
}

// Wrote remembers a write of state st, after which the object shows the
// essence showing ("" when the state records an older essence).
func (m *Memory) Wrote(st *state.State, showing string) {
	m.written, m.showing, m.writtenAt = st, showing, time.Now()
}

// Unsaved is what a reconcile meant to write when its write failed, or
// what it put off writing (retries counted in memory).
type Unsaved struct {
	St      *state.State
	Results map[string]any
	// Patch is the handlers' own patch (nil if they made none), which st
	// describes: it is sent again with st.
	Patch *spec.Patch
	// PatchLanded says that Patch's object part landed and the status
	// write with st, which goes after it where st is kept in status, did
	// not: only that status write is sent again.
	PatchLanded bool
}

// Memories holds the memory of every object seen. An object's memory is used
// only by the one reconcile that handles the object at a time.
//
// An object's memo starts as a shallow copy of the operator memo, as in
// Kopf, taken when the object is first seen after the startup handlers
// finished (so it holds what they put there). Index functions run while the
// startup handlers still run (Kopf starts watching only after them), and
// admission requests can come then too: an object they see first gets the
// operator memo's keys at its first sight after startup, except the keys
// its memo has by then.
type Memories struct {
	mu       sync.Mutex
	m        map[types.NamespacedName]*Memory
	started  *gate.Gate // the operator's gate, which says when startup is done; nil: memos start empty
	operator *spec.Memo
}

// newMemories returns an empty set; objects' memos are seeded from the
// operator memo once the gate g says startup is done.
func New(g *gate.Gate, operator *spec.Memo) *Memories {
	return &Memories{m: map[types.NamespacedName]*Memory{}, started: g, operator: operator}
}

// Get returns the memory of the object, new if the object is new or was
// replaced by another of the same name.
func (ms *Memories) Get(key types.NamespacedName, uid types.UID) *Memory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m := ms.of(key, uid)
	ms.seed(m)
	return m
}

// of returns the memory of the object, new if the object is new or was
// replaced by another of the same name; ms.mu is held.
func (ms *Memories) of(key types.NamespacedName, uid types.UID) *Memory {
	m, ok := ms.m[key]
	if !ok || m.uid != uid {
		m = &Memory{uid: uid}
		ms.m[key] = m
	}
	return m
}

// Find returns the memo of the object if it has a memory, or nil; uid ""
// stands for whichever object has that name.
func (ms *Memories) Find(key types.NamespacedName, uid types.UID) *spec.Memo {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.m[key]
	if !ok || uid != "" && m.uid != uid {
		return nil
	}
	ms.seed(m)
	return &m.Memo
}

// seed gives m's memo the operator memo's keys once the startup handlers
// are done.
func (ms *Memories) seed(m *Memory) {
	if m.seeded || ms.started == nil || !ms.started.HasStarted() {
		return
	}
	spec.SeedMemo(&m.Memo, ms.operator)
	m.seeded = true
}

// Holding returns the UID of the object of that name if gopf last saw it
// holding a finalizer gopf answers for and did not release it; "" if not,
// or if gopf has no memory of it.
func (ms *Memories) Holding(key types.NamespacedName) types.UID {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if m, ok := ms.m[key]; ok && m.Held && !m.Released {
		return m.uid
	}
	return ""
}

// Hold records that the object of that name and UID holds a finalizer gopf
// answers for, as seen outside the cache (see Holding).
func (ms *Memories) Hold(key types.NamespacedName, uid types.UID) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.of(key, uid).Held = true
}

// Forget drops the memory of the object, which is gone.
func (ms *Memories) Forget(key types.NamespacedName) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, key)
}

// ClonePatch copies a handler patch, so that what a failed write carried
// is kept apart from the turn's patch, which results and state join. The
// top-level keys of a patch are single field names, as Set made them.
func ClonePatch(p *spec.Patch) *spec.Patch {
	out := &spec.Patch{}
	for key, v := range spec.ObjectPatch(p) {
		_ = out.Set(key, state.DeepCopyJSON(v))
	}
	for key, v := range spec.StatusPatch(p) {
		spec.MergeStatus(out, key, state.DeepCopyJSON(v))
	}
	for _, fn := range spec.Transforms(p) {
		_ = out.Transform(fn)
	}
	return out
}
