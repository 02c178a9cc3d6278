package kopfstate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
	"github.com/gopf-dev/gopf/internal/state"
)

// Names Kopf uses under its prefix besides handler ids.
const (
	kopfEssenceName = "last-handled-configuration"
	kopfTouchName   = "touch-dummy"
)

// Store reads the state a Kopf operator left on objects of one kind
// and, for StorageKopf, also keeps gopf's state in that format:
//
//   - the last-handled essence in <prefix>/last-handled-configuration, as
//     compact JSON with metadata last and a trailing newline;
//   - one progress record per handler of an unfinished cause in
//     <prefix>/<handler id> (ids mangled and shortened as Kopf does, see
//     kopfKeys), with Kopf's fields, and in the record of a handler that
//     finished, the essence it finished on (see kopfRecord.Handled);
//     records in status.kopf.progress (where Kopf kept them before it moved
//     to annotations) are read too.
//
// A Kopf record names a handler only through its mangled id, so the store
// knows the ids of the kind's handlers; a record of any other handler is
// left alone, with one warning per record name.
type Store struct {
	Prefix    string
	Kind      string                          // the kind of the objects, which typed objects do not carry
	ids       []string                        // handler ids of the kind, in registration order
	keys      map[string][]string             // the annotation keys of each id
	EssenceOf func(obj map[string]any) string // the object's current essence, as gopf computes it
	Log       logr.Logger
	warned    sync.Map // annotation key or status id → true
}

// Known adds a handler id of the kind.
func (s *Store) Known(id string) {
	for _, have := range s.ids {
		if have == id {
			return
		}
	}
	s.ids = append(s.ids, id)
	if s.keys == nil {
		s.keys = map[string][]string{}
	}
	s.keys[id] = kopfKeys(s.Prefix, id, false)
}

// keysOf returns the annotation keys of a handler id.
func (s *Store) keysOf(id string, replicaSetOfDeployment bool) []string {
	if keys, ok := s.keys[id]; ok && !replicaSetOfDeployment {
		return keys
	}
	return kopfKeys(s.Prefix, id, replicaSetOfDeployment)
}

func (s *Store) Where() string {
	return "annotations " + s.Prefix + "/* (Kopf's format)"
}

// InStatus is false: Kopf's state is written in annotations (records
// Kopf kept in status.kopf.progress are read, and removed, but never
// written).
func (s *Store) InStatus() bool { return false }

func (s *Store) Places() []state.Storage { return []state.Storage{s} }

// kopfRecord is one handler's progress as Kopf stores it; the field order
// is Kopf's. Handled is gopf's alone, last: the essence (as gopf encodes
// it) that a handler which finished finished on. Kopf's own records say
// nothing of it, since Kopf takes a change made while a cause is
// unfinished into that cause; without it, a record read back after such a
// change would be taken for a handler done with the newer change too, and
// that change would never reach it. Kopf reads records field by field and
// leaves this one unread.
type kopfRecord struct {
	Started *string  `json:"started,omitempty"`
	Stopped *string  `json:"stopped,omitempty"`
	Delayed *string  `json:"delayed,omitempty"`
	Purpose *string  `json:"purpose,omitempty"`
	Retries int      `json:"retries"`
	Success bool     `json:"success"`
	Failure bool     `json:"failure"`
	Message *string  `json:"message,omitempty"`
	Subrefs []string `json:"subrefs,omitempty"`
	Handled *string  `json:"handled,omitempty"`
}

// found is the Kopf state on one object: the essence text, and each
// handler's record with the keys it was found under.
type found struct {
	essence     string
	essenceKeys []string
	records     map[string]*kopfRecord
	keys        map[string][]string // annotation keys of each record (none if in status)
	inStatus    map[string]bool     // records in status.kopf.progress
	touchKeys   []string
}

// newFound is an empty found, ready to be filled.
func newFound() *found {
	return &found{records: map[string]*kopfRecord{}, keys: map[string][]string{}, inStatus: map[string]bool{}}
}

// scan finds the Kopf state on obj. Unreadable state is an error naming
// where it is.
func (s *Store) scan(obj map[string]any) (*found, error) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if !s.mayHold(obj, annotations) {
		return &found{}, nil
	}
	rsd := s.Kind == "ReplicaSet" && ownedByDeployment(obj)
	sc := &kopfScan{found: newFound(), annotations: annotations, claimed: map[string]bool{}}
	s.scanEssence(sc, rsd)
	if err := s.scanRecords(sc, rsd); err != nil {
		return nil, err
	}
	if err := s.scanStatus(obj, sc.found); err != nil {
		return nil, err
	}
	return sc.found, nil
}

// kopfScan is a scan of one object's annotations under the prefix: what it
// found so far, and the keys it claimed, so that each key is read once.
type kopfScan struct {
	*found
	annotations map[string]any
	claimed     map[string]bool
}

// scanEssence finds the essence and the touch annotation, and claims the
// keys that hold no record: those, Kopf's marker, and on a ReplicaSet of a
// Deployment the keys Kubernetes copied from the Deployment, which are the
// Deployment's.
func (s *Store) scanEssence(sc *kopfScan, rsd bool) {
	for _, key := range kopfKeys(s.Prefix, kopfEssenceName, rsd) {
		if text, ok := sc.annotations[key].(string); ok {
			if sc.essence == "" {
				sc.essence = text
			}
			sc.essenceKeys = append(sc.essenceKeys, key)
			sc.claimed[key] = true
		}
	}
	for _, key := range kopfKeys(s.Prefix, kopfTouchName, rsd) {
		if _, ok := sc.annotations[key]; ok {
			sc.touchKeys = append(sc.touchKeys, key)
			sc.claimed[key] = true
		}
	}
	sc.claimed[s.Prefix+"/"+state.KopfMarkerName] = true
	if rsd {
		sc.claimed[kopfKeyV2(s.Prefix, kopfEssenceName)] = true
		sc.claimed[kopfKeyV2(s.Prefix, kopfTouchName)] = true
	}
}

// scanRecords reads the progress records in annotations: those of the
// kind's handlers under their keys, then the rest under the prefix, which
// are records of sub-handlers (<parent>/<sub>, written <parent>.<sub>) or
// of handlers this operator does not have (left alone, with a warning).
func (s *Store) scanRecords(sc *kopfScan, rsd bool) error {
	for _, id := range s.ids {
		for _, key := range s.keysOf(id, rsd) {
			if _, ok := sc.annotations[key]; ok {
				if err := sc.record(id, key); err != nil {
					return err
				}
			}
		}
	}
	var rest []string
	for key := range sc.annotations {
		if strings.HasPrefix(key, s.Prefix+"/") && !sc.claimed[key] {
			rest = append(rest, key)
		}
	}
	sort.Strings(rest)
	for _, key := range rest {
		if id := s.subID(strings.TrimPrefix(key, s.Prefix+"/")); id != "" {
			if err := sc.record(id, key); err != nil {
				return err
			}
			continue
		}
		s.warnUnknown(key)
	}
	return nil
}

// record reads the annotation key as a record of handler id, and claims
// it. Of records of one id under several keys, the first one read counts.
func (sc *kopfScan) record(id, key string) error {
	text, _ := sc.annotations[key].(string)
	var rec kopfRecord
	if err := json.Unmarshal([]byte(text), &rec); err != nil {
		return fmt.Errorf("Kopf's progress annotation %s is not a progress record: %w", key, err)
	}
	if sc.records[id] == nil {
		sc.records[id] = &rec
	}
	sc.keys[id] = append(sc.keys[id], key)
	sc.claimed[key] = true
	return nil
}

// scanStatus reads the records in status.kopf.progress, where Kopf kept
// them before it moved to annotations; a record in annotations counts
// first, as Kopf reads them.
func (s *Store) scanStatus(obj map[string]any, f *found) error {
	status, _ := obj["status"].(map[string]any)
	kopfStatus, _ := status["kopf"].(map[string]any)
	progress, _ := kopfStatus["progress"].(map[string]any)
	for id, raw := range progress {
		if !s.owns(id) {
			s.warnUnknown("status.kopf.progress." + id)
			continue
		}
		data, err := json.Marshal(raw)
		var rec kopfRecord
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err != nil {
			return fmt.Errorf("Kopf's status.kopf.progress.%s is not a progress record: %w", id, err)
		}
		f.inStatus[id] = true
		if f.records[id] == nil {
			f.records[id] = &rec
		}
	}
	return nil
}

// mayHold reports whether obj has anything where Kopf keeps its state: an
// annotation under the prefix, or status.kopf.progress. Most objects have
// nothing there, and scan is then spared its work.
func (s *Store) mayHold(obj, annotations map[string]any) bool {
	for key := range annotations {
		if len(key) > len(s.Prefix) && key[len(s.Prefix)] == '/' && strings.HasPrefix(key, s.Prefix) {
			return true
		}
	}
	status, _ := obj["status"].(map[string]any)
	kopfStatus, _ := status["kopf"].(map[string]any)
	return kopfStatus["progress"] != nil
}

// subID returns the id of a sub-handler record written under name (the
// mangled <parent>/<sub>), or "" if name belongs to no handler of the kind.
func (s *Store) subID(name string) string {
	best := ""
	for _, id := range s.ids {
		if safe := kopfSafeName(id) + "."; strings.HasPrefix(name, safe) && len(safe) > len(best) {
			best = id
		}
	}
	if best == "" {
		return ""
	}
	return best + "/" + strings.TrimPrefix(name, kopfSafeName(best)+".")
}

// owns reports whether a status record's id is a handler of the kind or a
// sub-handler of one.
func (s *Store) owns(id string) bool {
	for _, have := range s.ids {
		if id == have || strings.HasPrefix(id, have+"/") {
			return true
		}
	}
	return false
}

func (s *Store) warnUnknown(where string) {
	if _, done := s.warned.LoadOrStore(where, true); done {
		return
	}
	s.Log.Info("WARNING: Kopf's progress names a handler this operator does not have; gopf leaves that record alone. "+
		"If the handler exists under another id, register it with handlers.ID and Kopf's id to continue where Kopf stopped",
		"record", where, "handlers", s.ids)
}

// Load returns Kopf's state on obj as gopf's, nil if there is none.
func (s *Store) Load(obj map[string]any) (*state.State, error) {
	f, err := s.scan(obj)
	if err != nil {
		return nil, err
	}
	return s.toState(obj, f)
}

func (s *Store) toState(obj map[string]any, f *found) (*state.State, error) {
	st := &state.State{}
	if f.essence != "" {
		normal, err := normalJSON(f.essence)
		if err != nil {
			return nil, fmt.Errorf("Kopf's annotation %s does not hold a JSON object: %w", f.essenceKeys[0], err)
		}
		st.Essence = normal
	}
	current := ""
	for id, rec := range f.records {
		p, err := rec.progress(obj, st.Essence != "")
		if err != nil {
			return nil, fmt.Errorf("Kopf's progress record of %q: %w", id, err)
		}
		if p.Finished() && p.Handled == "" {
			// Kopf's own records apply to the cause as it stands: a handler
			// that finished is done with the object as it is now.
			if current == "" {
				current = s.EssenceOf(obj)
			}
			p.Handled = current
		}
		if st.Progress == nil {
			st.Progress = map[string]*state.Progress{}
		}
		st.Progress[id] = p
	}
	if st.Essence == "" && len(st.Progress) == 0 {
		return nil, nil
	}
	return st, nil
}

// Progress turns a Kopf record into gopf's. A record without a purpose
// (older Kopf) is for the cause the object shows: delete while it is being
// deleted, update once it was handled, create before.
func (r *kopfRecord) progress(obj map[string]any, handled bool) (*state.Progress, error) {
	p := &state.Progress{Retries: r.Retries, Success: r.Success, Failure: r.Failure}
	switch {
	case r.Purpose != nil:
		p.Reason = handlers.Reason(*r.Purpose)
	case deletionRequested(obj):
		p.Reason = handlers.ReasonDelete
	case handled:
		p.Reason = handlers.ReasonUpdate
	default:
		p.Reason = handlers.ReasonCreate
	}
	p.Started = time.Now().UTC().Truncate(time.Microsecond)
	if r.Started != nil {
		t, err := ParseTime(*r.Started)
		if err != nil {
			return nil, fmt.Errorf("started: %w", err)
		}
		p.Started = t
	}
	if r.Delayed != nil && !p.Finished() {
		t, err := ParseTime(*r.Delayed)
		if err != nil {
			return nil, fmt.Errorf("delayed: %w", err)
		}
		p.Delayed = &t
	}
	if r.Message != nil {
		p.Message = *r.Message
	}
	if r.Handled != nil && p.Finished() {
		if err := state.ValidEssence(*r.Handled, "handled"); err != nil {
			return nil, err
		}
		p.Handled = *r.Handled
	}
	return p, nil
}

// kopfRecordOf is gopf's record in Kopf's format; stopped is when the
// handler finished, if it did, and the record then says on which essence,
// if withHandled (see handledFits).
func kopfRecordOf(p *state.Progress, stopped *time.Time, withHandled bool) *kopfRecord {
	purpose, started := string(p.Reason), formatKopfTime(p.Started)
	r := &kopfRecord{Started: &started, Purpose: &purpose, Retries: p.Retries, Success: p.Success, Failure: p.Failure}
	if stopped != nil && p.Finished() {
		text := formatKopfTime(*stopped)
		r.Stopped = &text
	}
	if p.Delayed != nil && !p.Finished() {
		text := formatKopfTime(*p.Delayed)
		r.Delayed = &text
	}
	if p.Message != "" {
		r.Message = &p.Message
	}
	if withHandled && p.Finished() && p.Handled != "" {
		r.Handled = &p.Handled
	}
	return r
}

// Save writes st in Kopf's format: what changed of the essence and the
// records, so that records of finished handlers keep their stopped time.
// It rounds the times in st to Kopf's precision (microseconds) and gives
// the records of an object not handled yet Kopf's purpose, create, so that
// st is what a load of the saved object returns.
func (s *Store) Save(p *spec.Patch, obj map[string]any, st *state.State) error {
	f, err := s.scan(obj)
	if err != nil {
		f = newFound()
	}
	meta, _ := obj["metadata"].(map[string]any)
	w := annotationWriter{p: p}
	w.annotations, _ = meta["annotations"].(map[string]any)
	rsd := s.Kind == "ReplicaSet" && ownedByDeployment(obj)
	if err := s.saveEssence(w, f, st.Essence, rsd); err != nil {
		return err
	}
	for id := range f.records {
		if _, keep := st.Progress[id]; !keep {
			s.purgeRecord(p, f, id)
		}
	}
	if err := s.saveRecords(w, obj, f, st, rsd); err != nil {
		return err
	}
	if !strings.HasPrefix(s.Prefix, "kopf.") && (st.Essence != "" || len(st.Progress) > 0) {
		// Kopf marks a prefix of its own choosing, so that other Kopf
		// operators (and gopf) keep its annotations out of the essence.
		marker := s.Prefix + "/" + state.KopfMarkerName
		if _, there := w.annotations[marker]; !there {
			yes := "yes"
			p.SetAnnotation(marker, &yes)
		}
	}
	return nil
}

// annotationWriter adds to a patch the annotations that change: those set
// to another value, and those removed (nil) that the object has.
type annotationWriter struct {
	p           *spec.Patch
	annotations map[string]any // the object's
}

func (w annotationWriter) set(key string, value *string) {
	old, there := w.annotations[key].(string)
	if value == nil && there || value != nil && (!there || old != *value) {
		w.p.SetAnnotation(key, value)
	}
}

// saveEssence writes the essence under each of its keys, or removes it
// wherever it was found when there is none.
func (s *Store) saveEssence(w annotationWriter, f *found, essence string, rsd bool) error {
	if essence == "" {
		for _, key := range f.essenceKeys {
			w.set(key, nil)
		}
		return nil
	}
	text, err := EssenceText(essence)
	if err != nil {
		return fmt.Errorf("the essence cannot be written in Kopf's format: %w", err)
	}
	for _, key := range kopfKeys(s.Prefix, kopfEssenceName, rsd) {
		w.set(key, &text)
	}
	return nil
}

// saveRecords writes the records of st that differ from those found, in
// Kopf's format and at Kopf's precision (see save). A rewritten record of
// a handler that had finished keeps its stopped time; others stop now.
func (s *Store) saveRecords(w annotationWriter, obj map[string]any, f *found, st *state.State, rsd bool) error {
	now := time.Now()
	handled, withHandled := st.Essence != "", handledFits(obj, st)
	for id, rec := range st.Progress {
		toKopfRecord(rec, handled)
		stopped := &now
		if old := f.records[id]; old != nil {
			if was, err := old.progress(obj, handled); err == nil && sameRecord(was, rec) {
				continue // unchanged: keep Kopf's text, stopped time and all
			}
			if t, ok := old.stoppedTime(); ok {
				stopped = &t
			}
		}
		data, err := state.Marshal(kopfRecordOf(rec, stopped, withHandled))
		if err != nil {
			return err
		}
		text := string(data)
		for _, key := range s.keysOf(id, rsd) {
			w.set(key, &text)
		}
	}
	return nil
}

// toKopfRecord rounds a record's times to Kopf's precision, and makes a
// record of an object not handled yet one of its creation, as Kopf
// records every handler's then, field handlers' included.
func toKopfRecord(rec *state.Progress, handled bool) {
	if !handled && rec.Reason == handlers.ReasonUpdate {
		rec.Reason = handlers.ReasonCreate
	}
	rec.Started = rec.Started.UTC().Truncate(time.Microsecond)
	if rec.Delayed != nil {
		d := rec.Delayed.UTC().Truncate(time.Microsecond)
		rec.Delayed = &d
	}
}

// stoppedTime is when the handler of a finished record stopped, if the
// record says so readably.
func (r *kopfRecord) stoppedTime() (time.Time, bool) {
	if r.Stopped == nil || !r.Success && !r.Failure {
		return time.Time{}, false
	}
	t, err := ParseTime(*r.Stopped)
	return t, err == nil
}

// sameRecord reports whether record b, to be saved, is the stored record
// a. A record of Kopf's (a says no essence) stands for the object as it
// is, as it did when it was read: it stays as Kopf wrote it.
func sameRecord(a, b *state.Progress) bool {
	x, y := *a, *b
	if x.Handled == "" {
		y.Handled = ""
	}
	return (&state.State{Progress: map[string]*state.Progress{"": &x}}).Encode() == (&state.State{Progress: map[string]*state.Progress{"": &y}}).Encode()
}

// purgeRecord removes one handler's record wherever Kopf keeps it.
func (s *Store) purgeRecord(p *spec.Patch, f *found, id string) {
	for _, key := range f.keys[id] {
		p.SetAnnotation(key, nil)
	}
	if f.inStatus[id] {
		spec.MergeStatus(p, "kopf", map[string]any{"progress": map[string]any{id: nil}})
	}
}

// Purge removes Kopf's state of the kind's handlers from obj: the
// essence, the records and the touch annotation. Records of handlers the
// operator does not have, Kopf's marker and Kopf's finalizer stay.
func (s *Store) Purge(p *spec.Patch, obj map[string]any) {
	f, err := s.scan(obj)
	if err != nil {
		return // unreadable: leave it for a person to look at
	}
	for _, key := range append(f.essenceKeys, f.touchKeys...) {
		p.SetAnnotation(key, nil)
	}
	for id := range f.records {
		s.purgeRecord(p, f, id)
	}
}

// ownedByDeployment reports an owner reference to a Deployment: Kopf marks
// the keys of such ReplicaSets (see kopfKeys).
func ownedByDeployment(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	owners, _ := meta["ownerReferences"].([]any)
	for _, o := range owners {
		if m, _ := o.(map[string]any); m["kind"] == "Deployment" {
			return true
		}
	}
	return false
}

// deletionRequested reports a deletionTimestamp on obj.
func deletionRequested(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	return meta["deletionTimestamp"] != nil
}

// Fallback is gopf's own storage, which reads every place gopf may
// have written as well as Kopf's state: storage, where this operator keeps
// the state; other, gopf's other place (annotations or status), where an
// older gopf or another configuration may have kept it; then Kopf's, for
// objects an operator takes over from Kopf. The first place that holds
// readable state wins. Once gopf stores the state, the copies elsewhere go
// (see save): objects move one by one, as gopf handles them.
type Fallback struct {
	state.Storage
	Other state.Purgeable
	Kopf  *Store
}

// Load returns the state of the first place that holds readable state. If
// none does, it returns the first place's error, if any place was
// unreadable.
func (s Fallback) Load(obj map[string]any) (*state.State, error) {
	st, bad := state.LoadAll(s, obj)
	if st != nil {
		return st, nil
	}
	return nil, bad
}

// Places are gopf's place, its other place and Kopf's, those there are.
func (s Fallback) Places() []state.Storage {
	out := []state.Storage{s.Storage}
	if s.Other != nil {
		out = append(out, s.Other)
	}
	if s.Kopf != nil {
		out = append(out, s.Kopf)
	}
	return out
}

// Save stores st in storage and removes the copies elsewhere: Kopf's, and
// the one in gopf's other place. A copy in annotations goes in the same
// write (the object patch, sent after the status patch). A copy in status
// goes once storage holds a state: the status patch is sent first, so that
// removing it in the write that moves the state could lose the state if
// the object patch then failed. A copy in status that cannot be read holds
// nothing to lose: it goes at once.
func (s Fallback) Save(p *spec.Patch, obj map[string]any, st *state.State) error {
	if err := s.Storage.Save(p, obj, st); err != nil {
		return err
	}
	switch {
	case s.Other == nil:
	case !s.Other.InStatus():
		s.Other.Purge(p, obj)
	default:
		held, err := s.Storage.Load(obj)
		_, otherErr := s.Other.Load(obj)
		if held != nil || err != nil || otherErr != nil {
			s.Other.Purge(p, obj)
		}
	}
	s.Kopf.Purge(p, obj)
	return nil
}
