package reconcile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// maxAnnotationsSize is Kubernetes' limit on the total size of an object's
// annotations (keys and values).
const maxAnnotationsSize = 256 * 1024

// state is what gopf keeps on an object between reconciles: the essence it
// last handled completely, and the progress of handlers of an unfinished
// cause.
type state struct {
	// Essence is the last-handled essence as compact JSON.
	Essence string `json:"lastHandled,omitempty"`
	// Progress holds one record per handler (and sub-handler) of the
	// unfinished cause, by handler id. Empty once the cause is done.
	Progress map[string]*progress `json:"progress,omitempty"`
}

// progress is one handler's record for the unfinished cause.
type progress struct {
	// Purpose is the cause the record was made for.
	Purpose handlers.Reason `json:"purpose"`
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

// patchValue is the record as a merge-patch value: fields the record does
// not have are nulled, so that a patch replaces the stored record whole.
func (p *progress) patchValue() map[string]any {
	m := map[string]any{"delayed": nil, "retries": nil, "success": nil, "failure": nil, "message": nil, "handled": nil}
	data, _ := json.Marshal(p)
	var set map[string]any
	_ = json.Unmarshal(data, &set)
	for k, v := range set {
		m[k] = v
	}
	return m
}

// finished reports whether the handler is done for this cause.
func (p *progress) finished() bool { return p.Success || p.Failure }

// clone copies a state, so that the loaded state can be compared with the one
// about to be saved.
func (s *state) clone() *state {
	out := &state{Essence: s.Essence}
	if len(s.Progress) > 0 {
		out.Progress = make(map[string]*progress, len(s.Progress))
		for id, p := range s.Progress {
			c := *p
			out.Progress[id] = &c
		}
	}
	return out
}

// encode is the canonical JSON of a state, for comparisons. No state and an
// empty one are the same: nothing stored.
func (s *state) encode() string {
	if s == nil {
		s = &state{}
	}
	data, _ := json.Marshal(s)
	return string(data)
}

// decodeProgress reads progress records from decoded JSON.
func decodeProgress(raw any, where string) (map[string]*progress, error) {
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
	var out map[string]*progress
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

// statusStorage keeps the state in status.<field>. Results go to status too,
// so results and state cost one request together.
type statusStorage struct{ field string }

func (s statusStorage) where() string { return "status." + s.field }

// inStatus is true: the state is written with the status subresource.
func (s statusStorage) inStatus() bool { return true }

func (s statusStorage) places() []storage { return []storage{s} }

func (s statusStorage) load(obj map[string]any) (*state, error) {
	status, _ := obj["status"].(map[string]any)
	raw, ok := status[s.field]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not an object", s.where(), raw)
	}
	st := &state{}
	if e, ok := m["lastHandled"]; ok && e != nil {
		if st.Essence, ok = e.(string); !ok {
			return nil, fmt.Errorf("%s.lastHandled is a %T, not a string", s.where(), e)
		}
		if err := validEssence(st.Essence, s.where()+".lastHandled"); err != nil {
			return nil, err
		}
	}
	var err error
	if st.Progress, err = decodeProgress(m["progress"], s.where()+".progress"); err != nil {
		return nil, err
	}
	if st.Essence == "" && len(st.Progress) == 0 {
		return nil, nil
	}
	return st, nil
}

func (s statusStorage) save(p *spec.Patch, obj map[string]any, st *state) error {
	// Compare with what is there, readable or not, so that a patch replaces
	// unreadable state as well: a merge patch merges maps, so records that
	// must go are nulled one by one.
	status, _ := obj["status"].(map[string]any)
	stored, storedIsMap := status[s.field].(map[string]any)
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
		value := rec.patchValue()
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
	if status[s.field] != nil && !storedIsMap {
		// Not an object at all: replace it whole.
		full := map[string]any{"lastHandled": nilIfEmpty(st.Essence)}
		if len(st.Progress) > 0 {
			full["progress"] = prog
		}
		p.SetStatus(s.field, full)
		return nil
	}
	spec.MergeStatus(p, s.field, m)
	return nil
}

// purge removes whatever is stored in status.<field>, readable or not.
func (s statusStorage) purge(p *spec.Patch, obj map[string]any) {
	if hasStatusField(obj, s.field) {
		p.SetStatus(s.field, nil)
	}
}

// annotationStorage keeps the state in annotations under prefix, for kinds
// whose status cannot keep it (see chooseStorage).
type annotationStorage struct{ prefix string }

func (s annotationStorage) essenceKey() string  { return s.prefix + "/last-handled-configuration" }
func (s annotationStorage) progressKey() string { return s.prefix + "/progress" }
func (s annotationStorage) where() string       { return "annotations " + s.prefix + "/*" }

// inStatus is false: the state is written in the object's annotations.
func (s annotationStorage) inStatus() bool { return false }

func (s annotationStorage) places() []storage { return []storage{s} }

func (s annotationStorage) load(obj map[string]any) (*state, error) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	st := &state{}
	if raw, ok := annotations[s.essenceKey()]; ok {
		st.Essence, _ = raw.(string)
		if err := validEssence(st.Essence, "annotation "+s.essenceKey()); err != nil {
			return nil, err
		}
	}
	if raw, ok := annotations[s.progressKey()]; ok {
		var err error
		if st.Progress, err = decodeProgress(raw, "annotation "+s.progressKey()); err != nil {
			return nil, err
		}
	}
	if st.Essence == "" && len(st.Progress) == 0 {
		return nil, nil
	}
	return st, nil
}

func (s annotationStorage) save(p *spec.Patch, obj map[string]any, st *state) error {
	values := map[string]*string{s.essenceKey(): nil, s.progressKey(): nil}
	if st.Essence != "" {
		values[s.essenceKey()] = &st.Essence
	}
	if len(st.Progress) > 0 {
		data, err := json.Marshal(st.Progress)
		if err != nil {
			return err
		}
		text := string(data)
		values[s.progressKey()] = &text
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
	if size > maxAnnotationsSize {
		return fmt.Errorf("%w: gopf's state would make the annotations %d bytes, over Kubernetes' limit of %d (the object's essence is too large to keep in annotations)", errStateTooLarge, size, maxAnnotationsSize)
	}
	for k, v := range values {
		if _, there := annotations[k]; !there && v == nil {
			continue
		}
		p.SetAnnotation(k, v)
	}
	return nil
}

// purge removes gopf's state annotations, readable or not.
func (s annotationStorage) purge(p *spec.Patch, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	for _, key := range []string{s.essenceKey(), s.progressKey()} {
		if _, there := annotations[key]; there {
			p.SetAnnotation(key, nil)
		}
	}
}

// validEssence reports stored essence that is not a JSON object. It checks
// without decoding: every reconcile reads the stored essence.
func validEssence(essence, where string) error {
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
