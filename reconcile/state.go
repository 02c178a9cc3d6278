package reconcile

import (
	"encoding/json"
	"fmt"
)

// state is what gopf keeps on an object between reconciles.
type state struct {
	// Essence is the last-handled essence as compact JSON.
	Essence string `json:"lastHandled"`
}

// patch collects the changes one reconcile makes to an object, as JSON merge
// patches: one for the main resource (metadata, spec, ...) and one for the
// status. Each is sent in one request, and only when it is not empty.
type patch struct {
	object map[string]any
	status map[string]any
}

func (p *patch) setStatus(key string, value any) {
	if p.status == nil {
		p.status = map[string]any{}
	}
	p.status[key] = value
}

func (p *patch) setAnnotation(key string, value any) {
	if p.object == nil {
		p.object = map[string]any{}
	}
	meta, _ := p.object["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		p.object["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[key] = value
}

// storage reads and writes the state kept on objects of one kind.
type storage interface {
	// load returns the stored state, nil if there is none, or an error
	// describing state that is there but cannot be read.
	load(obj map[string]any) (*state, error)
	// save adds st to p.
	save(p *patch, st *state)
	// saved reports whether obj (a write's response) carries st.
	saved(obj map[string]any, st *state) bool
}

// statusStorage keeps the state in status.<field>. Results go to status too,
// so results and state cost one request together.
type statusStorage struct{ field string }

func (s statusStorage) load(obj map[string]any) (*state, error) {
	status, _ := obj["status"].(map[string]any)
	raw, ok := status[s.field]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("status.%s is a %T, not an object", s.field, raw)
	}
	essence, ok := m["lastHandled"].(string)
	if !ok {
		return nil, fmt.Errorf("status.%s.lastHandled is missing or not a string", s.field)
	}
	return &state{Essence: essence}, validEssence(essence, "status."+s.field+".lastHandled")
}

func (s statusStorage) save(p *patch, st *state) {
	p.setStatus(s.field, map[string]any{"lastHandled": st.Essence})
}

func (s statusStorage) saved(obj map[string]any, st *state) bool {
	got, err := s.load(obj)
	return err == nil && got != nil && got.Essence == st.Essence
}

// annotationStorage keeps the state in annotations under prefix, for kinds
// without a status subresource (or whose status drops unknown fields).
type annotationStorage struct{ prefix string }

func (s annotationStorage) key() string { return s.prefix + "/last-handled-configuration" }

func (s annotationStorage) load(obj map[string]any) (*state, error) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	raw, ok := annotations[s.key()]
	if !ok {
		return nil, nil
	}
	essence, _ := raw.(string)
	return &state{Essence: essence}, validEssence(essence, "annotation "+s.key())
}

func (s annotationStorage) save(p *patch, st *state) {
	p.setAnnotation(s.key(), st.Essence)
}

func (s annotationStorage) saved(obj map[string]any, st *state) bool {
	got, err := s.load(obj)
	return err == nil && got != nil && got.Essence == st.Essence
}

// validEssence reports stored essence that is not a JSON object.
func validEssence(essence, where string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(essence), &m); err != nil || m == nil {
		return fmt.Errorf("%s does not hold a JSON object", where)
	}
	return nil
}
