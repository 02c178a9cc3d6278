package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// MaxAnnotationsSize is Kubernetes' limit on the total size of an object's
// annotations (keys and values).
const MaxAnnotationsSize = 256 * 1024

// State is what gopf keeps on an object between reconciles: the essence it
// last handled completely, and the progress of handlers of an unfinished
// cause.
type State struct {
	// Essence is the last-handled essence as compact JSON.
	Essence string `json:"lastHandled,omitempty"`
	// Progress holds one record per handler (and sub-handler) of the
	// unfinished cause, by handler id. Empty once the cause is done.
	Progress map[string]*Progress `json:"progress,omitempty"`
}

// Progress is one handler's record for the unfinished cause.
type Progress struct {
	// Reason is the cause the record was made for, stored under Kopf's
	// name for it, "purpose".
	Reason handlers.Reason `json:"purpose"`
	// Started is the first attempt.
	Started time.Time `json:"started"`
	// Delayed is when the next attempt is due, if the handler is sleeping.
	Delayed *time.Time `json:"delayed,omitempty"`
	// Retries counts attempts so far.
	Retries int `json:"retries,omitempty"`
	// Success and Failure say how the handler finished, if it did.
	Success bool `json:"success,omitempty"`
	Failure bool `json:"failure,omitempty"`
	// Message is the last error.
	Message string `json:"message,omitempty"`
	// Handled is the essence (JSON) the outcome applies to, for update
	// handlers: a handler that succeeded for one change and then sees
	// another is called again with just the newer change.
	Handled string `json:"handled,omitempty"`
}

// PatchValue is the record as a merge-patch value: fields the record does
// not have are nulled, so that a patch replaces the stored record whole.
func (p *Progress) PatchValue() map[string]any {
	m := map[string]any{"delayed": nil, "retries": nil, "success": nil, "failure": nil, "message": nil, "handled": nil}
	data, _ := json.Marshal(p)
	var set map[string]any
	_ = json.Unmarshal(data, &set)
	for k, v := range set {
		m[k] = v
	}
	return m
}

// Finished reports whether the handler is done for this cause.
func (p *Progress) Finished() bool { return p.Success || p.Failure }

// Clone copies a state, so that the loaded state can be compared with the one
// about to be saved.
func (s *State) Clone() *State {
	out := &State{Essence: s.Essence}
	if len(s.Progress) > 0 {
		out.Progress = make(map[string]*Progress, len(s.Progress))
		for id, p := range s.Progress {
			c := *p
			out.Progress[id] = &c
		}
	}
	return out
}

// Encode is the canonical JSON of a state, for comparisons. No state and an
// empty one are the same: nothing stored.
func (s *State) Encode() string {
	if s == nil {
		s = &State{}
	}
	data, _ := json.Marshal(s)
	return string(data)
}

// DecodeProgress reads progress records from decoded JSON.
func DecodeProgress(raw any, where string) (map[string]*Progress, error) {
	if raw == nil {
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", where, err)
	}
	if s, ok := raw.(string); ok {
		data = []byte(s)
	}
	var out map[string]*Progress
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s is not a map of progress records: %w", where, err)
	}
	for id, p := range out {
		if p == nil {
			return nil, fmt.Errorf("%s has an empty record for %q", where, id)
		}
	}
	return out, nil
}

// StatusStorage keeps the state in status.<field>. Results go to status too,
// so results and state cost one request together.
type StatusStorage struct{ Field string }

func (s StatusStorage) Where() string { return "status." + s.Field }

// InStatus is true: the state is written with the status subresource.
func (s StatusStorage) InStatus() bool { return true }

func (s StatusStorage) Places() []Storage { return []Storage{s} }

func (s StatusStorage) Load(obj map[string]any) (*State, error) {
	status, _ := obj["status"].(map[string]any)
	raw, ok := status[s.Field]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not an object", s.Where(), raw)
	}
	st := &State{}
	if e, ok := m["lastHandled"]; ok && e != nil {
		if st.Essence, ok = e.(string); !ok {
			return nil, fmt.Errorf("%s.lastHandled is a %T, not a string", s.Where(), e)
		}
		if err := ValidEssence(st.Essence, s.Where()+".lastHandled"); err != nil {
			return nil, err
		}
	}
	var err error
	if st.Progress, err = DecodeProgress(m["progress"], s.Where()+".progress"); err != nil {
		return nil, err
	}
	if st.Essence == "" && len(st.Progress) == 0 {
		return nil, nil
	}
	return st, nil
}

func (s StatusStorage) Save(p *spec.Patch, obj map[string]any, st *State) error {
	// Compare with what is there, readable or not, so that a patch replaces
	// unreadable state as well: a merge patch merges maps, so records that
	// must go are nulled one by one.
	status, _ := obj["status"].(map[string]any)
	stored, storedIsMap := status[s.Field].(map[string]any)
	m := map[string]any{}
	if _, ok := stored["lastHandled"]; ok || st.Essence != "" {
		m["lastHandled"] = nilIfEmpty(st.Essence)
	}
	storedProgress, progressIsMap := stored["progress"].(map[string]any)
	prog := map[string]any{}
	for id := range storedProgress {
		if _, ok := st.Progress[id]; !ok {
			prog[id] = nil
		}
	}
	for id, rec := range st.Progress {
		value := rec.PatchValue()
		// Null whatever else the stored record holds: encoding/json reads
		// keys in any case, so a stored "Success" would outlive the patch
		// and still be read as the record's success.
		stored, _ := storedProgress[id].(map[string]any)
		for k := range stored {
			if _, ok := value[k]; !ok {
				value[k] = nil
			}
		}
		prog[id] = value
	}
	_, hadProgress := stored["progress"]
	switch {
	case len(st.Progress) == 0 && hadProgress:
		m["progress"] = nil
	case len(st.Progress) > 0 && !progressIsMap:
		m["progress"] = prog // replaces whatever was there
	case len(prog) > 0:
		m["progress"] = prog
	}
	if status[s.Field] != nil && !storedIsMap {
		// Not an object at all: replace it whole.
		full := map[string]any{"lastHandled": nilIfEmpty(st.Essence)}
		if len(st.Progress) > 0 {
			full["progress"] = prog
		}
		p.SetStatus(s.Field, full)
		return nil
	}
	spec.MergeStatus(p, s.Field, m)
	return nil
}

// Purge removes whatever is stored in status.<field>, readable or not.
func (s StatusStorage) Purge(p *spec.Patch, obj map[string]any) {
	if HasStatusField(obj, s.Field) {
		p.SetStatus(s.Field, nil)
	}
}

// AnnotationStorage keeps the state in annotations under prefix, for kinds
// whose status cannot keep it (see chooseStorage).
type AnnotationStorage struct{ Prefix string }

func (s AnnotationStorage) EssenceKey() string  { return s.Prefix + "/last-handled-configuration" }
func (s AnnotationStorage) ProgressKey() string { return s.Prefix + "/progress" }
func (s AnnotationStorage) Where() string       { return "annotations " + s.Prefix + "/*" }

// InStatus is false: the state is written in the object's annotations.
func (s AnnotationStorage) InStatus() bool { return false }

func (s AnnotationStorage) Places() []Storage { return []Storage{s} }

func (s AnnotationStorage) Load(obj map[string]any) (*State, error) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	st := &State{}
	if raw, ok := annotations[s.EssenceKey()]; ok {
		st.Essence, _ = raw.(string)
		if err := ValidEssence(st.Essence, "annotation "+s.EssenceKey()); err != nil {
			return nil, err
		}
	}
	if raw, ok := annotations[s.ProgressKey()]; ok {
		var err error
		if st.Progress, err = DecodeProgress(raw, "annotation "+s.ProgressKey()); err != nil {
			return nil, err
		}
	}
	if st.Essence == "" && len(st.Progress) == 0 {
		return nil, nil
	}
	return st, nil
}

func (s AnnotationStorage) Save(p *spec.Patch, obj map[string]any, st *State) error {
	values := map[string]*string{s.EssenceKey(): nil, s.ProgressKey(): nil}
	if st.Essence != "" {
		values[s.EssenceKey()] = &st.Essence
	}
	if len(st.Progress) > 0 {
		data, err := json.Marshal(st.Progress)
		if err != nil {
			return err
		}
		text := string(data)
		values[s.ProgressKey()] = &text
	}
	// Kubernetes refuses objects whose annotations exceed 256 KiB in all;
	// say so clearly instead of sending a request that must fail.
	size := 0
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	for k, v := range annotations {
		if _, ours := values[k]; !ours {
			text, _ := v.(string)
			size += len(k) + len(text)
		}
	}
	for k, v := range values {
		if v != nil {
			size += len(k) + len(*v)
		}
	}
	if size > MaxAnnotationsSize {
		return fmt.Errorf("%w: gopf's state would make the annotations %d bytes, over Kubernetes' limit of %d (the object's essence is too large to keep in annotations)", ErrTooLarge, size, MaxAnnotationsSize)
	}
	for k, v := range values {
		if _, there := annotations[k]; !there && v == nil {
			continue
		}
		p.SetAnnotation(k, v)
	}
	return nil
}

// Purge removes gopf's state annotations, readable or not.
func (s AnnotationStorage) Purge(p *spec.Patch, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	for _, key := range []string{s.EssenceKey(), s.ProgressKey()} {
		if _, there := annotations[key]; there {
			p.SetAnnotation(key, nil)
		}
	}
}

// ValidEssence reports stored essence that is not a JSON object. It checks
// without decoding: every reconcile reads the stored essence.
func ValidEssence(essence, where string) error {
	if !strings.HasPrefix(strings.TrimLeft(essence, " \t\r\n"), "{") || !json.Valid([]byte(essence)) {
		return fmt.Errorf("%s does not hold a JSON object", where)
	}
	return nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// SameState reports whether two states are stored the same (nil and empty
// are the same: nothing stored).
func SameState(a, b *State) bool {
	if a == nil {
		a = &State{}
	}
	if b == nil {
		b = &State{}
	}
	if len(a.Progress) == 0 && len(b.Progress) == 0 {
		return a.Essence == b.Essence // what is stored when a cause is done
	}
	return a.Encode() == b.Encode()
}
